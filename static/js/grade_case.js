// The case beside a graded report: the CT viewer, whose keys (1–5 windows, arrows for slices)
// act only while the case has the focus, so they never score a rubric row. A click in the case
// gives it the focus; Escape gives the keys back to grading.
import { CtViewer } from "./ct_viewer.js";

const panel = document.querySelector("[data-grade-case]");
if (panel) {
  const config = JSON.parse(panel.querySelector("#ct-config").textContent);
  const root = panel.querySelector("#ct-viewer");
  panel.addEventListener("pointerdown", () => panel.focus({ preventScroll: true }));
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.querySelector("[data-ct-help]:not([hidden])")) {
      panel.blur(); // the focus goes back to the page: the grading keys act again
    }
  });
  if (root && config.volumes.length) {
    const viewer = new CtViewer(root, { ...config, keyScope: "[data-grade-case]" });
    window.ctViewer = viewer;
    viewer.loadAll();
  }
}
