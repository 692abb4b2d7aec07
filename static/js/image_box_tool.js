// 2D boxes on the review page's images, CVAT-style: draw (B), select, move, resize by the corner
// handles, relabel, delete (withdraw one's own proposal) and undo (Ctrl+Z), by mouse or keyboard.
// Every change is saved at once through the API (a box revision; a stale version is a 409, never
// an overwrite). EndoBench questions whose options are coordinates get those boxes drawn with
// their letters. The box list shows every box of the item's images, with filters.

import { BoxHistory, DELETED, DELETE_REFUSED, api, bindFilters, fillAuthorFilter, isShown, nudgeRect } from "./box_common.js";

const { gettext, interpolate } = globalThis; // Django's JavaScript catalog (base.html)
const STEP = 5; // pixels per Shift+arrow
const MIN_SIZE = 2; // a drag shorter than this is a click, not a box
const CONFLICT = () => gettext("Someone else changed this box meanwhile; the boxes are reloaded.");

function isTyping(el) {
  return Boolean(el?.closest?.("input:not([type=checkbox]):not([type=radio]), textarea, select, [contenteditable]"));
}

class ImageBoxTool {
  constructor(root, config) {
    this.root = root;
    this.config = config;
    this.csrfToken = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"];
    this.$ = (selector) => root.querySelector(selector);
    this.filters = {};
    this.selected = null; // {view, id}
    this.drawing = false;
    this.showOptions = true;
    this.views = config.images.map((image) => {
      const pane = document.querySelector(`[data-zoom-pane][data-image="${image.sha256}"]`);
      return { image, pane, layer: pane?.querySelector("[data-box-layer]"), boxes: [] };
    }).filter((view) => view.layer);
    this.history = new BoxHistory({
      boxUrl: (id) => this.boxUrl(id),
      csrfToken: this.csrfToken,
      current: (id) => this.find(id)?.box,
    });
    this.views.forEach((view) => this.bindView(view));
    this.bindPanel();
    this.load();
  }

  boxUrl(id) { return this.config.boxUrl.replace("{id}", id); }

  find(id) {
    for (const view of this.views) {
      const box = view.boxes.find((b) => b.id === id);
      if (box) return { view, box };
    }
    return null;
  }

  store(view, box) {
    const at = view.boxes.findIndex((b) => b.id === box.id);
    if (at >= 0) view.boxes[at] = box; else view.boxes.push(box);
  }

  async load() {
    try {
      for (const view of this.views) view.boxes = await api(view.image.boxesUrl, "GET", undefined, this.csrfToken);
    } catch (error) {
      this.message(error.message, true);
    }
    this.root.dataset.loaded = "true";
    this.render();
  }

  // Mine to change: my own proposal (the server decides again, and answers 403 otherwise).
  mayEdit(box) {
    return this.config.canDraw && box.author === this.config.username && box.source !== "imported" && box.state === "proposed";
  }

  message(text, bad = false) {
    const status = this.$("[data-box-status]");
    status.textContent = text || "";
    status.classList.toggle("bad", bad);
  }

  failed(error) {
    this.message(error.status === 409 ? CONFLICT() : error.message, true);
    if (error.status === 409) this.load();
  }

  // --- geometry: the layer covers the image as shown (object-fit: contain) --------------------

  placeLayer(view) {
    const { pane, layer, image } = view;
    const width = pane.clientWidth;
    const height = pane.clientHeight;
    const scale = Math.min(width / image.width, height / image.height);
    Object.assign(layer.style, {
      left: `${(width - image.width * scale) / 2}px`,
      top: `${(height - image.height * scale) / 2}px`,
      width: `${image.width * scale}px`,
      height: `${image.height * scale}px`,
    });
  }

  pixelAt(view, event) {
    const rect = view.layer.getBoundingClientRect(); // zoom and pan included
    const x = ((event.clientX - rect.left) / rect.width) * view.image.width;
    const y = ((event.clientY - rect.top) / rect.height) * view.image.height;
    return [Math.min(Math.max(x, 0), view.image.width), Math.min(Math.max(y, 0), view.image.height)];
  }

  // --- pointer -----------------------------------------------------------------------------

  bindView(view) {
    this.placeLayer(view);
    new ResizeObserver(() => this.placeLayer(view)).observe(view.pane);
    view.pane.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      const handle = event.target.closest("[data-corner]");
      const element = event.target.closest("[data-box-id]");
      if (this.drawing) return this.startDraw(view, event);
      if (!element) return;
      event.preventDefault();
      const id = Number(element.dataset.boxId);
      this.select(view, id, false);
      const { box } = this.find(id);
      if (!this.mayEdit(box)) return;
      this.startDrag(view, event, box, handle ? handle.dataset.corner : "move");
    });
  }

  follow(view, event, onMove, onUp) {
    const target = view.pane;
    target.setPointerCapture(event.pointerId);
    const move = (e) => onMove(e);
    const up = (e) => {
      target.removeEventListener("pointermove", move);
      target.removeEventListener("pointerup", up);
      target.removeEventListener("pointercancel", up);
      onUp(e);
    };
    target.addEventListener("pointermove", move);
    target.addEventListener("pointerup", up);
    target.addEventListener("pointercancel", up);
  }

  startDraw(view, event) {
    event.preventDefault();
    const [ax, ay] = this.pixelAt(view, event);
    this.draft = { view, box: [ax, ay, ax, ay] };
    this.follow(view, event, (e) => {
      const [x, y] = this.pixelAt(view, e);
      this.draft.box = [Math.min(ax, x), Math.min(ay, y), Math.max(ax, x), Math.max(ay, y)];
      this.renderView(view);
    }, () => {
      const box = this.draft.box.map(Math.round);
      this.draft = null;
      this.renderView(view);
      if (box[2] - box[0] >= MIN_SIZE && box[3] - box[1] >= MIN_SIZE) this.create(view, box);
    });
  }

  startDrag(view, event, box, corner) {
    const start = this.pixelAt(view, event);
    const from = [...box.voxel];
    const { width, height } = view.image;
    let moved = false;
    this.follow(view, event, (e) => {
      const [x, y] = this.pixelAt(view, e);
      let dx = Math.round(x - start[0]);
      let dy = Math.round(y - start[1]);
      const v = [...from];
      if (corner === "move") {
        dx = Math.min(Math.max(dx, -from[0]), width - from[2]);
        dy = Math.min(Math.max(dy, -from[1]), height - from[3]);
        v[0] += dx; v[2] += dx; v[1] += dy; v[3] += dy;
      } else {
        if (corner.includes("w")) v[0] = Math.min(Math.max(from[0] + dx, 0), from[2] - 1);
        if (corner.includes("e")) v[2] = Math.max(Math.min(from[2] + dx, width), from[0] + 1);
        if (corner.includes("n")) v[1] = Math.min(Math.max(from[1] + dy, 0), from[3] - 1);
        if (corner.includes("s")) v[3] = Math.max(Math.min(from[3] + dy, height), from[1] + 1);
      }
      moved = moved || dx !== 0 || dy !== 0;
      box.shown = v;
      this.renderView(view);
    }, () => {
      const shown = box.shown;
      delete box.shown;
      if (moved && shown && shown.join() !== from.join()) this.update(view, box, { voxel: shown });
      else this.renderView(view);
    });
  }

  // --- writes (each one a revision on the server) ----------------------------------------------

  async create(view, coords) {
    try {
      const label = this.$("[data-box-label]").value;
      const saved = await api(view.image.boxesUrl, "POST", { label, box: coords }, this.csrfToken);
      this.history.record("create", saved, saved);
      this.store(view, saved);
      this.setDrawing(false);
      this.selected = { view, id: saved.id };
      this.message(gettext("Box saved."));
    } catch (error) {
      this.failed(error);
    }
    this.render();
  }

  async update(view, box, changes) {
    const before = { ...box };
    try {
      const saved = await api(this.boxUrl(box.id), "PATCH", { version: box.version, ...changes }, this.csrfToken);
      this.history.record("update", before, saved);
      this.store(view, saved);
      this.message(gettext("Box saved."));
    } catch (error) {
      this.failed(error);
    }
    this.render();
  }

  async remove() {
    const found = this.selected && this.find(this.selected.id);
    if (!found) return;
    const { view, box } = found;
    if (!this.mayEdit(box)) {
      this.message(DELETE_REFUSED(), true);
      return;
    }
    try {
      const saved = await api(`${this.boxUrl(box.id)}?version=${box.version}`, "DELETE", undefined, this.csrfToken);
      this.history.record("delete", { ...box }, saved);
      this.store(view, saved);
      this.selected = null;
      this.message(DELETED());
    } catch (error) {
      this.failed(error);
    }
    this.render();
  }

  async undo() {
    if (!this.history.size) return;
    try {
      const { box } = await this.history.undo();
      const found = this.find(box.id);
      if (found) this.store(found.view, box);
      this.selected = found && isShown(box) ? { view: found.view, id: box.id } : null;
      this.message(gettext("Undone."));
    } catch (error) {
      this.failed(error);
    }
    this.render();
  }

  // Keyboard: move (or resize) the selected box; saved once the keys pause.
  nudge(key, resize) {
    const found = this.selected && this.find(this.selected.id);
    if (!found || !this.mayEdit(found.box)) return false;
    const { view, box } = found;
    const v = [...(box.shown || box.voxel)];
    nudgeRect(v, [0, 1, 2, 3], key, STEP, view.image.width, view.image.height, resize);
    box.shown = v;
    this.renderView(view);
    clearTimeout(this.nudgeTimer);
    this.nudgeTimer = setTimeout(() => {
      const shown = box.shown;
      delete box.shown;
      if (shown) this.update(view, box, { voxel: shown });
    }, 500);
    return true;
  }

  // --- selection and panel ---------------------------------------------------------------------

  select(view, id, focus = true) {
    this.selected = { view, id };
    const { box } = this.find(id);
    const label = this.$("[data-box-label]");
    if (label) label.value = box.label;
    this.render();
    if (focus) view.layer.querySelector(`[data-box-id="${id}"]`)?.focus({ preventScroll: true });
  }

  setDrawing(on) {
    this.drawing = on && this.config.canDraw;
    const button = this.$("[data-box-draw]");
    if (button) {
      button.classList.toggle("on", this.drawing);
      button.setAttribute("aria-pressed", String(this.drawing));
    }
    this.views.forEach((view) => { view.pane.dataset.drawing = String(this.drawing); });
  }

  bindPanel() {
    this.$("[data-box-draw]")?.addEventListener("click", () => this.setDrawing(!this.drawing));
    this.$("[data-box-delete]")?.addEventListener("click", () => this.remove());
    this.$("[data-box-undo]")?.addEventListener("click", () => this.undo());
    this.$("[data-box-label]")?.addEventListener("change", (event) => {
      const found = this.selected && this.find(this.selected.id);
      if (found && this.mayEdit(found.box) && found.box.label !== event.target.value) {
        this.update(found.view, found.box, { label: event.target.value });
      }
    });
    bindFilters(this.root, this.filters, () => this.renderList());
    this.root.querySelectorAll("[data-option-toggle]").forEach((box) => box.addEventListener("change", () => {
      this.showOptions = box.checked;
      this.render();
    }));
  }

  // Keys the review page also uses (arrows, Escape) are taken only while a box is concerned.
  keydown(event) {
    if (isTyping(event.target)) return false;
    const key = event.key;
    if ((event.ctrlKey || event.metaKey) && key.toLowerCase() === "z" && this.config.canDraw) return this.undo(), true;
    if (event.ctrlKey || event.metaKey) return false;
    if (key.startsWith("Arrow") && event.shiftKey) return this.nudge(key, event.altKey);
    if (event.altKey) return false;
    if ((key === "b" || key === "B") && this.config.canDraw) return this.setDrawing(!this.drawing), true;
    if ((key === "Delete" || key === "Backspace") && this.selected) return this.remove(), true;
    if (key === "Escape" && (this.drawing || this.selected)) {
      this.setDrawing(false);
      this.selected = null;
      this.render();
      return true;
    }
    return false;
  }

  // --- rendering ---------------------------------------------------------------------------

  render() {
    const chosen = this.selected && this.find(this.selected.id);
    const labelSelect = this.$("[data-box-label]");
    if (chosen && labelSelect) labelSelect.value = chosen.box.label;
    this.views.forEach((view) => this.renderView(view));
    this.renderList();
    const found = this.selected && this.find(this.selected.id);
    const del = this.$("[data-box-delete]");
    if (del) del.disabled = !(found && this.mayEdit(found.box));
    const undo = this.$("[data-box-undo]");
    if (undo) undo.disabled = !this.history.size;
  }

  place(element, box, view) {
    const { width, height } = view.image;
    element.style.left = `${(100 * box[0]) / width}%`;
    element.style.top = `${(100 * box[1]) / height}%`;
    element.style.width = `${(100 * (box[2] - box[0])) / width}%`;
    element.style.height = `${(100 * (box[3] - box[1])) / height}%`;
  }

  renderView(view) {
    const layer = view.layer;
    const focused = document.activeElement?.closest?.("[data-box-id]")?.dataset.boxId;
    layer.replaceChildren();
    if (this.showOptions) {
      for (const option of view.image.optionBoxes) {
        const element = document.createElement("div");
        element.className = `option-box${option.fits ? "" : " outside"}`;
        element.dataset.letter = option.letter;
        this.place(element, option.box, view);
        const tag = document.createElement("span");
        tag.textContent = option.letter;
        element.append(tag);
        layer.append(element);
      }
    }
    for (const box of view.boxes) {
      if (!isShown(box)) continue;
      const selected = this.selected?.id === box.id;
      const element = document.createElement("div");
      element.className = `img-box label-${box.label} state-${box.state}${selected ? " selected" : ""}`;
      Object.assign(element.dataset, { boxId: box.id, boxUi: "", voxel: JSON.stringify(box.voxel) });
      element.tabIndex = 0;
      element.setAttribute("role", "button");
      element.setAttribute("aria-pressed", String(selected));
      const name = this.config.labels[box.label] || box.label;
      element.setAttribute("aria-label", interpolate(gettext("%(label)s box #%(id)s by %(author)s, %(state)s"), { label: name, id: box.id, author: box.author || gettext("import"), state: this.config.states[box.state] || box.state }, true));
      element.addEventListener("focus", () => { if (this.selected?.id !== box.id) this.select(view, box.id); });
      this.place(element, box.shown || box.voxel, view);
      const tag = document.createElement("span");
      tag.textContent = name;
      element.append(tag);
      if (selected && this.mayEdit(box)) {
        for (const corner of ["nw", "ne", "sw", "se"]) {
          const handle = document.createElement("i");
          handle.className = `box-handle ${corner}`;
          handle.dataset.corner = corner;
          element.append(handle);
        }
      }
      layer.append(element);
    }
    if (this.draft && this.draft.view === view) {
      const element = document.createElement("div");
      element.className = "img-box draft";
      this.place(element, this.draft.box, view);
      layer.append(element);
    }
    if (focused) layer.querySelector(`[data-box-id="${focused}"]`)?.focus({ preventScroll: true });
  }

  renderList() {
    const list = this.$("[data-box-list]");
    list.replaceChildren();
    const f = this.filters;
    let total = 0;
    const authors = new Set();
    for (const view of this.views) {
      for (const box of view.boxes) {
        total += 1;
        authors.add(box.author || "—");
        const keep = (!f.state || box.state === f.state) && (!f.label || box.label === f.label) && (!f.author || (box.author || "—") === f.author);
        if (keep) list.append(this.listRow(view, box));
      }
    }
    fillAuthorFilter(this.$('[data-filter="author"]'), authors);
    this.$("[data-box-count]").textContent = interpolate(gettext("%(shown)s of %(total)s boxes"), { shown: list.children.length, total }, true);
  }

  listRow(view, box) {
    const row = document.createElement("li");
    row.className = `box-row state-${box.state}${this.selected?.id === box.id ? " selected" : ""}`;
    Object.assign(row.dataset, { boxId: box.id, state: box.state, label: box.label, voxel: JSON.stringify(box.voxel) });
    const title = document.createElement("button");
    title.type = "button";
    title.className = "link-button";
    title.textContent = `${this.config.labels[box.label] || box.label} #${box.id} · [${box.voxel.join(", ")}]`;
    title.disabled = !isShown(box);
    title.addEventListener("click", () => this.select(view, box.id));
    const state = document.createElement("span");
    state.className = `chip box-state-${box.state}`;
    state.textContent = this.config.states[box.state] || box.state;
    const by = document.createElement("span");
    by.className = "muted small";
    by.textContent = box.author || gettext("imported");
    row.append(title, state, by);
    return row;
  }
}

let current = null;

function init() {
  const root = document.querySelector("[data-box-tool]");
  const config = document.getElementById("box-tool-config");
  current = root && config ? new ImageBoxTool(root, JSON.parse(config.textContent)) : null;
  if (current) window.imageBoxTool = current;
}

// Capture phase: a selected box's keys must not also reach the review page's (ArrowRight = next).
window.addEventListener("keydown", (event) => {
  if (current && current.keydown(event)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);
document.addEventListener("htmx:afterSwap", init);
init();
