// Wires the case panel of a Gastric-X item's review or adjudication page: the CT viewer, its
// box tool and the endoscopy boxes, as the case page does. htmx may bring a case panel in place
// of the work area: it is wired once it is in the page.
import { BoxTool } from "./box_tool.js";
import { CtViewer } from "./ct_viewer.js";
import { ImageBoxes } from "./image_boxes.js";

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

wire();
document.addEventListener("htmx:afterSettle", wire);
