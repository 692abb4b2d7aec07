// Wires the case page: the CT viewer, its box tool and the endoscopy image boxes.
import { BoxTool } from "./box_tool.js";
import { CtViewer } from "./ct_viewer.js";
import { ImageBoxes } from "./image_boxes.js";

const viewerRoot = document.getElementById("ct-viewer");
const viewerConfig = JSON.parse(document.getElementById("ct-config").textContent);
if (viewerRoot && viewerConfig.volumes.length) {
  const viewer = new CtViewer(viewerRoot, viewerConfig);
  window.ctViewer = viewer; // handy in the console and for the repaint benchmark
  window.boxTool = new BoxTool(viewer, document.getElementById("box-panel"), viewerConfig);
  viewer.loadAll();
}
const imageConfigElement = document.getElementById("endo-config");
const imageConfig = imageConfigElement && JSON.parse(imageConfigElement.textContent);
if (imageConfig) new ImageBoxes(document.getElementById("endo-panel"), imageConfig);
