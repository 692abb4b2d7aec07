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
// from the list) fills the voxel fields of the edit form, if it lies on the item's phase.
const BOX_FIELDS = ["x0", "y0", "z0", "x1", "y1", "z1"];

function useSelectedBox(button) {
  const fields = button.closest("[data-box-edit]");
  const status = fields.querySelector("[data-box-use-status]");
  const draft = window.boxTool?.draft;
  if (!draft) {
    status.textContent = gettext("Select or draw a box in the viewer first.");
    return;
  }
  const volume = draft.viewport.volume;
  if (fields.dataset.phase && volume.phase !== fields.dataset.phase) {
    status.textContent = interpolate(gettext("The selected box is on the %(phase)s phase, not this item's."), { phase: volume.phaseName }, true);
    return;
  }
  BOX_FIELDS.forEach((name, i) => {
    fields.querySelector(`[name="${name}"]`).value = String(draft.voxel[i]);
  });
  status.textContent = gettext("Filled from the selected box.");
}

wire();
document.addEventListener("htmx:afterSettle", wire);
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-box-use]");
  if (button) useSelectedBox(button);
});
