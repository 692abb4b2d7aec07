// The case's endoscopy image: zoom (wheel), pan (drag), double-click to reset, and 2D boxes in
// image pixels drawn with the "Draw" toggle and saved through the API.

import { api } from "./box_common.js";

const { gettext } = globalThis; // Django's JavaScript catalog, loaded by base.html

export class ImageBoxes {
  constructor(root, config) {
    this.root = root;
    this.config = config;
    this.frame = root.querySelector(".endo-frame");
    this.inner = root.querySelector(".endo-inner");
    this.layer = root.querySelector(".endo-boxes");
    this.$ = (selector) => root.querySelector(selector);
    this.view = { scale: 1, x: 0, y: 0 };
    this.drawing = false;
    this.draft = null;
    this.boxes = config.boxes;
    this.bind();
    this.render();
  }

  pixelAt(event) {
    const rect = this.inner.getBoundingClientRect();
    const x = Math.floor(((event.clientX - rect.left) / rect.width) * this.config.width);
    const y = Math.floor(((event.clientY - rect.top) / rect.height) * this.config.height);
    return [Math.min(Math.max(x, 0), this.config.width - 1), Math.min(Math.max(y, 0), this.config.height - 1)];
  }

  bind() {
    this.frame.addEventListener("wheel", (event) => {
      event.preventDefault();
      const rect = this.frame.getBoundingClientRect();
      const factor = event.deltaY < 0 ? 1.2 : 1 / 1.2;
      const scale = Math.min(Math.max(this.view.scale * factor, 1), 8);
      // Zoom about the pointer: the image point under it stays under it.
      const px = event.clientX - rect.left;
      const py = event.clientY - rect.top;
      this.view.x = px - ((px - this.view.x) * scale) / this.view.scale;
      this.view.y = py - ((py - this.view.y) * scale) / this.view.scale;
      this.view.scale = scale;
      this.applyView();
    }, { passive: false });
    this.frame.addEventListener("dblclick", () => { this.view = { scale: 1, x: 0, y: 0 }; this.applyView(); });
    this.frame.addEventListener("mousedown", (event) => {
      if (event.button !== 0) return;
      event.preventDefault();
      if (this.drawing) this.startBox(event); else this.startPan(event);
    });
    this.$("#endo-draw").addEventListener("click", () => {
      this.drawing = !this.drawing;
      this.$("#endo-draw").classList.toggle("on", this.drawing);
      this.frame.classList.toggle("drawing", this.drawing);
    });
    this.$("#endo-save").addEventListener("click", () => this.save());
    // Boxes are drawn by the reviewers of this case (and curators); others only look.
    this.$("#endo-draw").hidden = !this.config.canDraw;
  }

  follow(onMove) {
    const up = () => { window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", up); };
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", up);
  }

  startPan(event) {
    const start = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y };
    this.follow((e) => {
      this.view.x = start.vx + e.clientX - start.x;
      this.view.y = start.vy + e.clientY - start.y;
      this.applyView();
    });
  }

  startBox(event) {
    const [x, y] = this.pixelAt(event);
    this.draft = [x, y, x + 1, y + 1];
    this.follow((e) => {
      const [px, py] = this.pixelAt(e);
      this.draft = [Math.min(x, px), Math.min(y, py), Math.max(x, px) + 1, Math.max(y, py) + 1];
      this.render();
    });
    this.render();
  }

  applyView() {
    if (this.view.scale === 1) this.view.x = this.view.y = 0;
    this.inner.style.transform = `translate(${this.view.x}px, ${this.view.y}px) scale(${this.view.scale})`;
  }

  async save() {
    if (!this.draft) return;
    const status = this.$("#endo-status");
    try {
      const saved = await api(this.config.boxesUrl, "POST", { label: this.$("#endo-label").value, box: this.draft }, this.config.csrfToken);
      this.boxes.push({ id: saved.id, label: saved.label, box: saved.voxel, state: saved.state, version: saved.version });
      this.draft = null;
      status.textContent = gettext("Saved.");
      status.classList.remove("bad");
    } catch (error) {
      status.textContent = error.message;
      status.classList.add("bad");
    }
    this.render();
  }

  render() {
    this.layer.replaceChildren();
    const add = (box, className, caption) => {
      const div = document.createElement("div");
      div.className = className;
      div.style.left = `${(100 * box[0]) / this.config.width}%`;
      div.style.top = `${(100 * box[1]) / this.config.height}%`;
      div.style.width = `${(100 * (box[2] - box[0])) / this.config.width}%`;
      div.style.height = `${(100 * (box[3] - box[1])) / this.config.height}%`;
      const tag = document.createElement("span");
      tag.textContent = caption;
      div.append(tag);
      this.layer.append(div);
    };
    for (const box of this.boxes) {
      if (box.state !== "rejected" && box.state !== "withdrawn") add(box.box, `ct-box label-${box.label}`, this.config.labels[box.label] || box.label);
    }
    if (this.draft) add(this.draft, "ct-box draft", "");
    this.$("#endo-save").disabled = !this.draft;
    this.$("#endo-count").textContent = String(this.boxes.filter((b) => b.state !== "rejected" && b.state !== "withdrawn").length);
  }
}
