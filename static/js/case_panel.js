// Wires the case panel of a Gastric-X item's review or adjudication page: the CT viewer, its
// box tool and the endoscopy boxes, as the case page does. htmx may bring a case panel in place
// of the work area: it is wired once it is in the page.
import { BoxTool } from "./box_tool.js";
import { CtViewer } from "./ct_viewer.js";
import { ImageBoxes } from "./image_boxes.js";

// Django's JavaScript catalog (base.html) defines gettext and interpolate before any module runs.
const { gettext, interpolate } = globalThis;

function wire() {
  const panel = document.querySelector("[data-case-panel]:not([data-wired])");
  if (!panel) return;
  panel.dataset.wired = "true";
  const viewerRoot = panel.querySelector("#ct-viewer");
  const viewerConfig = JSON.parse(panel.querySelector("#ct-config").textContent);
  if (viewerRoot && viewerConfig.volumes.length) {
    const viewer = new CtViewer(viewerRoot, viewerConfig);
    window.ctViewer = viewer;
    window.boxTool = new BoxTool(viewer, panel.querySelector("#box-panel"), viewerConfig);
    viewer.loadAll();
  }
  const imageConfigElement = panel.querySelector("#endo-config");
  if (imageConfigElement) {
    new ImageBoxes(panel.querySelector("#endo-panel"), JSON.parse(imageConfigElement.textContent));
  }
}

// A box item is corrected with the viewer's box tool: the box selected there (drawn or picked
// from the list) fills the voxel fields of the edit form, if it lies on the item's phase. A box
// drawn on one slice keeps the item box's slices unless First/Last slice were set: a drawing says
// nothing of depth. The change is shown before/after, on the slices and in voxels and mm.
const BOX_FIELDS = ["x0", "y0", "z0", "x1", "y1", "z1"];

function extent(voxel, spacing) {
  const [x0, y0, z0, x1, y1, z1] = voxel;
  const size = [x1 - x0, y1 - y0, z1 - z0];
  const mm = size.map((n, i) => (n * spacing[i]).toFixed(1));
  return interpolate(gettext("x %(x0)s–%(x1)s · y %(y0)s–%(y1)s · slices %(first)s–%(last)s · %(voxels)s voxels · %(mm)s mm"), {
    x0, x1: x1 - 1, y0, y1: y1 - 1, first: z0 + 1, last: z1, voxels: size.join(" × "), mm: mm.join(" × "),
  }, true);
}

function showChange(fields, before, after, spacing, keptSlices) {
  let change = fields.querySelector("[data-box-change]");
  if (!change) {
    change = document.createElement("div");
    change.className = "box-change small";
    change.dataset.boxChange = "";
    fields.append(change);
  }
  const line = (name, text) => {
    const row = document.createElement("div");
    const label = document.createElement("b");
    label.textContent = `${name}: `;
    row.append(label, text);
    return row;
  };
  change.replaceChildren(line(gettext("Before"), extent(before, spacing)), line(gettext("After"), extent(after, spacing)));
  if (keptSlices) {
    const note = document.createElement("div");
    note.className = "muted";
    note.dataset.boxKeptSlices = "";
    note.textContent = gettext("Drawn on one slice: the box keeps its slices. Set First/Last slice in the box tool to change them.");
    change.append(note);
  }
}

function useSelectedBox(button) {
  const fields = button.closest("[data-box-edit]");
  const status = fields.querySelector("[data-box-use-status]");
  const tool = window.boxTool;
  const draft = tool?.draft;
  if (!draft) {
    status.textContent = gettext("Select or draw a box in the viewer first.");
    return;
  }
  const volume = draft.viewport.volume;
  if (fields.dataset.phase && volume.phase !== fields.dataset.phase) {
    status.textContent = interpolate(gettext("The selected box is on the %(phase)s phase, not this item's."), { phase: volume.phaseName }, true);
    return;
  }
  const inputs = BOX_FIELDS.map((name) => fields.querySelector(`[name="${name}"]`));
  const before = inputs.map((input) => Number(input.defaultValue)); // the box as the page showed it
  const current = inputs.map((input) => Number(input.value));
  const after = [...draft.voxel];
  const keptSlices = Boolean(draft.oneSlice) && current[5] > current[2];
  if (keptSlices) [after[2], after[5]] = [current[2], current[5]];
  inputs.forEach((input, i) => { input.value = String(after[i]); });
  draft.voxel[2] = after[2];
  draft.voxel[5] = after[5];
  tool.showBefore(volume.phase, before);
  tool.renderAll();
  showChange(fields, before, after, volume.spacing, keptSlices);
  status.textContent = gettext("Filled from the selected box.");
}

wire();
document.addEventListener("htmx:afterSettle", wire);
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-box-use]");
  if (button) useSelectedBox(button);
});
