// 3D boxes on the CT viewer: draw a rectangle on a slice, set the first and last slice, move it
// or drag its edges, label, save through the API; delete (withdraw) one's own proposal, undo;
// accept/reject (adjudication, curators); copy to the other phases (the server carries the box
// through patient coordinates). The box list shows every box of every phase, with filters.

import { BoxHistory, DELETED, DELETE_REFUSED, api, bindFilters, fillAuthorFilter, isShown, nudgeRect } from "./box_common.js";

const EDGE_PX = 7; // how close (screen pixels) the pointer must be to grab an edge
const CLICK_PX = 4; // a press that moves less than this is a click (selects), more a pan

// Django's JavaScript catalog (base.html) defines gettext and interpolate before any module runs.
const { gettext, interpolate } = globalThis;
const STATE_NAMES = { proposed: gettext("Proposed"), accepted: gettext("Accepted"), rejected: gettext("Rejected"), withdrawn: gettext("Withdrawn") };
const SOURCE_NAMES = { drawn: gettext("drawn"), imported: gettext("imported"), copied: gettext("copied") };
const CONFLICT = () => gettext("Someone else changed this box meanwhile: reload the page to see their version.");
const stateName = (state) => STATE_NAMES[state] || state;
const sliceRange = (first, last) => interpolate(gettext("slices %(first)s–%(last)s"), { first, last }, true);

function fmt(point) {
  return `(${point.map((v) => v.toFixed(1)).join(", ")})`;
}

export class BoxTool {
  constructor(viewer, panel, config) {
    this.viewer = viewer;
    this.panel = panel;
    this.config = config;
    this.boxes = new Map(config.volumes.map((volume) => [volume.id, volume.boxes]));
    this.draft = null; // {viewport, id, label, voxel: [x0,y0,z0,x1,y1,z1], version, state, source}
    this.drawMode = false;
    // Boxes drawn here on one slice whose slices nobody chose: a correction made of one keeps
    // the corrected box's slices (case_panel.js), since a drawing says nothing about depth.
    this.oneSlice = new Set();
    this.before = null; // {phase, voxel}: the box being corrected, outlined on its slices
    this.$ = (selector) => panel.querySelector(selector);
    this.filters = {};
    this.history = new BoxHistory({
      boxUrl: (id) => this.boxUrl(id),
      csrfToken: config.csrfToken,
      current: (id) => this.find(id)?.box,
    });
    viewer.viewports.forEach((viewport) => this.bindStage(viewport));
    viewer.pointerHandlers.push((viewport, event) => this.pointerDown(viewport, event));
    viewer.onSlice(() => this.renderOverlays());
    this.bindPanel();
    this.bindKeys();
    // Only what this user may do is offered: a reviewer proposes boxes on the cases they review;
    // accepting or rejecting is adjudication's or a curator's (the server checks again).
    for (const id of ["#box-accept", "#box-reject"]) this.$(id).hidden = !config.canJudge;
    for (const id of ["#box-draw", "#box-copy", "#box-undo"]) this.$(id).hidden = !config.canDraw;
    this.renderAll();
  }

  // Whether this user may move, resize, relabel or delete the box (the server decides again):
  // their own proposal, or anything as a curator's correction.
  mayEdit(box) {
    if (!box || box.id === null || box.id === undefined) return true;
    if (this.config.canCorrect) return box.state !== "withdrawn";
    return this.config.canDraw && this.isMine(box) && box.state === "proposed";
  }

  isMine(box) { return box.author === this.config.username && box.source !== "imported"; }

  find(id) {
    for (const [volumeId, list] of this.boxes) {
      const box = list.find((b) => b.id === id);
      if (box) return { volumeId, box };
    }
    return null;
  }

  // --- pointer ---------------------------------------------------------------------------

  // A press on a slice (left button, the viewer's pan tool): true when the box tool takes it.
  pointerDown(viewport, event) {
    const [x, y] = viewport.voxelAt(event);
    const edges = this.edgesNear(viewport, event);
    if (edges) {
      this.drag(viewport, (px, py) => this.moveEdges(edges, px, py));
      return true;
    }
    if (this.drawMode) {
      this.startDrawing(viewport, x, y);
      return true;
    }
    const draft = this.draft;
    if (draft && draft.viewport === viewport && this.contains(draft.voxel, viewport.z, x, y)) {
      if (this.mayEdit(draft)) this.startMove(viewport, x, y);
      return true;
    }
    const hit = this.boxAt(viewport, x, y);
    if (!hit) return false;
    // Another box under the press: a click selects it, a drag pans the slice as anywhere else.
    const start = [event.clientX, event.clientY];
    const up = (release) => {
      window.removeEventListener("mouseup", up);
      if (Math.hypot(release.clientX - start[0], release.clientY - start[1]) < CLICK_PX) this.select(viewport, hit);
    };
    window.addEventListener("mouseup", up);
    return false;
  }

  bindStage(viewport) {
    viewport.stage.addEventListener("mousemove", (event) => {
      const edges = this.edgesNear(viewport, event);
      const horizontal = edges && (edges.includes(0) || edges.includes(3));
      const vertical = edges && (edges.includes(1) || edges.includes(4));
      const [x, y] = viewport.voxelAt(event);
      const overBox = this.viewer.tool === "pan" && !this.drawMode && (this.boxAt(viewport, x, y) || (this.draft?.viewport === viewport && this.contains(this.draft.voxel, viewport.z, x, y)));
      viewport.stage.style.cursor = horizontal && vertical ? "nwse-resize" : horizontal ? "ew-resize" : vertical ? "ns-resize" : this.drawMode ? "crosshair" : overBox ? "move" : "";
    });
  }

  // Drag the whole draft, keeping its size, inside the slice.
  startMove(viewport, x, y) {
    const v = this.draft.voxel;
    const start = { x, y, v: [...v] };
    this.drag(viewport, (px, py) => {
      const dx = Math.min(Math.max(px - start.x, -start.v[0]), viewport.nx - start.v[3]);
      const dy = Math.min(Math.max(py - start.y, -start.v[1]), viewport.ny - start.v[4]);
      v[0] = start.v[0] + dx; v[3] = start.v[3] + dx;
      v[1] = start.v[1] + dy; v[4] = start.v[4] + dy;
    });
  }

  contains(v, z, x, y) { return this.inRange(v, z) && v[0] <= x && x < v[3] && v[1] <= y && y < v[4]; }

  drag(viewport, onMove) {
    const move = (event) => {
      const [x, y] = viewport.voxelAt(event);
      onMove(x, y);
      this.renderOverlays();
      this.renderEditor();
    };
    const up = () => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  startDrawing(viewport, x, y) {
    const z = viewport.z;
    // Drawn over the selected box's slices, the new rectangle keeps their extent: only the
    // First/Last slice controls change the depth.
    const base = this.draft && this.draft.viewport === viewport && this.inRange(this.draft.voxel, z) ? this.draft : null;
    const [z0, z1] = base ? [base.voxel[2], base.voxel[5]] : [z, z + 1];
    this.draft = { viewport, id: null, label: this.$("#box-label").value, voxel: [x, y, z0, x + 1, y + 1, z1], version: null, state: "proposed", source: "drawn", oneSlice: !base };
    if (base) this.message(interpolate(gettext("The box keeps %(slices)s; change them with First/Last slice (F, L)."), { slices: sliceRange(z0 + 1, z1) }, true));
    const anchor = [x, y];
    this.drag(viewport, (px, py) => {
      this.draft.voxel[0] = Math.min(anchor[0], px);
      this.draft.voxel[3] = Math.max(anchor[0], px) + 1;
      this.draft.voxel[1] = Math.min(anchor[1], py);
      this.draft.voxel[4] = Math.max(anchor[1], py) + 1;
    });
    this.renderAll();
  }

  // Indices into voxel (0 = x0, 1 = y0, 3 = x1, 4 = y1) of the draft edges under the pointer.
  edgesNear(viewport, event) {
    const draft = this.draft;
    if (!draft || draft.viewport !== viewport || !this.inRange(draft.voxel, viewport.z) || !this.mayEdit(draft)) return null;
    const rect = viewport.stage.getBoundingClientRect();
    const px = event.clientX - rect.left;
    const py = event.clientY - rect.top;
    const sx = rect.width / viewport.nx;
    const sy = rect.height / viewport.ny;
    const [x0, y0, , x1, y1] = draft.voxel;
    const insideX = px > x0 * sx - EDGE_PX && px < x1 * sx + EDGE_PX;
    const insideY = py > y0 * sy - EDGE_PX && py < y1 * sy + EDGE_PX;
    const edges = [];
    if (insideY && Math.abs(px - x0 * sx) < EDGE_PX) edges.push(0);
    else if (insideY && Math.abs(px - x1 * sx) < EDGE_PX) edges.push(3);
    if (insideX && Math.abs(py - y0 * sy) < EDGE_PX) edges.push(1);
    else if (insideX && Math.abs(py - y1 * sy) < EDGE_PX) edges.push(4);
    return edges.length ? edges : null;
  }

  moveEdges(edges, x, y) {
    const v = this.draft.voxel;
    for (const edge of edges) {
      if (edge === 0) v[0] = Math.min(x, v[3] - 1);
      if (edge === 3) v[3] = Math.max(x + 1, v[0] + 1);
      if (edge === 1) v[1] = Math.min(y, v[4] - 1);
      if (edge === 4) v[4] = Math.max(y + 1, v[1] + 1);
    }
  }

  inRange(voxel, z) { return voxel[2] <= z && z < voxel[5]; }

  boxAt(viewport, x, y) {
    return (this.boxes.get(viewport.volume.id) || []).find((box) => {
      const v = box.voxel;
      return isShown(box) && this.contains(v, viewport.z, x, y);
    });
  }

  // --- selection and editing ---------------------------------------------------------------

  select(viewport, box) {
    this.draft = { viewport, id: box.id, label: box.label, voxel: [...box.voxel], version: box.version, state: box.state, source: box.source, mm: box.mm, author: box.author, oneSlice: this.oneSlice.has(box.id) };
    this.setDrawMode(false);
    this.renderAll();
  }

  jumpTo(volumeId, boxId) {
    const viewport = this.viewer.viewports.find((v) => v.volume.id === volumeId);
    const box = (this.boxes.get(volumeId) || []).find((b) => b.id === boxId);
    if (!viewport || !box) return;
    this.select(viewport, box);
    this.viewer.activate(viewport);
    this.viewer.scrollTo(viewport, Math.floor((box.voxel[2] + box.voxel[5] - 1) / 2));
  }

  setSliceBound(which) {
    const draft = this.draft;
    if (!draft) return;
    const z = draft.viewport.z;
    this.slicesChosen(draft);
    if (which === "first") {
      draft.voxel[2] = z;
      draft.voxel[5] = Math.max(draft.voxel[5], z + 1);
    } else {
      draft.voxel[5] = z + 1;
      draft.voxel[2] = Math.min(draft.voxel[2], z);
    }
    this.renderAll();
  }

  setSlicesFromInputs() {
    const draft = this.draft;
    if (!draft) return;
    const nz = draft.viewport.nz;
    const first = Math.min(Math.max(Number(this.$("#box-first").value) || 1, 1), nz);
    const last = Math.min(Math.max(Number(this.$("#box-last").value) || first, first), nz);
    this.slicesChosen(draft);
    draft.voxel[2] = first - 1;
    draft.voxel[5] = last;
    this.renderAll();
  }

  slicesChosen(draft) {
    draft.oneSlice = false;
    if (draft.id !== null) this.oneSlice.delete(draft.id);
  }

  // The box a correction replaces, outlined (dashed) on its slices beside the new one.
  showBefore(phase, voxel) {
    this.before = voxel ? { phase, voxel } : null;
    this.renderOverlays();
  }

  async save() {
    const draft = this.draft;
    if (!draft) return;
    draft.label = this.$("#box-label").value;
    const volume = draft.viewport.volume;
    const before = draft.id === null ? null : this.find(draft.id)?.box;
    try {
      const saved = draft.id === null
        ? await api(volume.boxesUrl, "POST", { label: draft.label, voxel: draft.voxel }, this.config.csrfToken)
        : await api(this.boxUrl(draft.id), "PATCH", { version: draft.version, label: draft.label, voxel: draft.voxel }, this.config.csrfToken);
      this.history.record(before ? "update" : "create", before ? { ...before } : saved, saved);
      if (draft.oneSlice) this.oneSlice.add(saved.id);
      this.store(volume.id, saved);
      this.select(draft.viewport, saved);
      this.message(gettext("Saved."));
    } catch (error) {
      this.message(error.status === 409 ? CONFLICT() : error.message, true);
    }
  }

  // Delete = withdraw one's own proposal (a revision the server keeps; undo restores it).
  async remove() {
    const draft = this.draft;
    if (!draft) return;
    if (draft.id === null) return this.cancel();
    const before = this.find(draft.id)?.box;
    if (!before || !this.config.canDraw || !this.isMine(before) || before.state !== "proposed") {
      this.message(DELETE_REFUSED(), true);
      return;
    }
    try {
      const saved = await api(`${this.boxUrl(draft.id)}?version=${before.version}`, "DELETE", undefined, this.config.csrfToken);
      this.history.record("delete", { ...before }, saved);
      this.store(draft.viewport.volume.id, saved);
      this.draft = null;
      this.renderAll();
      this.message(DELETED());
    } catch (error) {
      this.message(error.status === 409 ? CONFLICT() : error.message, true);
    }
  }

  async undo() {
    if (!this.history.size) return;
    try {
      const { box } = await this.history.undo();
      const found = this.find(box.id);
      if (found) this.store(found.volumeId, box);
      const viewport = found && this.viewer.viewports.find((v) => v.volume.id === found.volumeId);
      if (viewport && isShown(box)) this.select(viewport, box); else { this.draft = null; this.renderAll(); }
      this.message(gettext("Undone."));
    } catch (error) {
      this.message(error.status === 409 ? CONFLICT() : error.message, true);
    }
  }

  async review(state) {
    const draft = this.draft;
    if (!draft || draft.id === null || !this.config.canJudge) return;
    try {
      const saved = await api(`${this.boxUrl(draft.id)}review/`, "POST", { version: draft.version, state }, this.config.csrfToken);
      this.store(draft.viewport.volume.id, saved);
      this.select(draft.viewport, saved);
      this.message(state === "accepted" ? gettext("Box accepted.") : gettext("Box rejected."));
    } catch (error) {
      this.message(error.status === 409 ? CONFLICT() : error.message, true);
    }
  }

  async copyToOtherPhases() {
    const draft = this.draft;
    if (!draft || draft.id === null) return;
    const targets = this.viewer.viewports.filter((v) => v !== draft.viewport);
    const copied = [];
    for (const target of targets) {
      try {
        const saved = await api(`${this.boxUrl(draft.id)}copy/`, "POST", { volume: target.volume.id }, this.config.csrfToken);
        this.store(target.volume.id, saved);
        copied.push(target.volume.phaseName);
      } catch (error) {
        this.message(`${target.volume.phaseName}: ${error.message}`, true);
      }
    }
    this.renderAll();
    if (copied.length) this.message(interpolate(gettext("Copied to %(phases)s."), { phases: copied.join(gettext(", ")) }, true));
  }

  boxUrl(id) { return this.config.boxUrl.replace("{id}", id); }

  store(volumeId, box) {
    const list = this.boxes.get(volumeId) || [];
    const position = list.findIndex((b) => b.id === box.id);
    if (position >= 0) list[position] = box; else list.push(box);
    this.boxes.set(volumeId, list);
  }

  cancel() {
    this.draft = null;
    this.renderAll();
  }

  setDrawMode(on) {
    if (on && !this.config.canDraw) return;
    this.drawMode = on;
    const button = this.$("#box-draw");
    button.classList.toggle("on", on);
    button.setAttribute("aria-pressed", String(on));
  }

  message(text, isError = false) {
    const status = this.$("#box-status");
    status.textContent = text || "";
    status.classList.toggle("bad", isError);
  }

  // --- rendering ---------------------------------------------------------------------------

  renderAll() {
    this.renderOverlays();
    this.renderEditor();
    this.renderList();
    this.$("#box-undo").disabled = !this.history.size;
  }

  renderOverlays() {
    for (const viewport of this.viewer.viewports) {
      const layer = viewport.element.querySelector(".ct-boxes");
      layer.replaceChildren();
      const tags = []; // the captions placed so far on this slice: none may cover another
      const add = (div) => { layer.append(div); this.unstack(div, tags); };
      const before = this.before;
      if (before && before.phase === viewport.volume.phase && this.inRange(before.voxel, viewport.z)) {
        add(this.rectangle(viewport, before.voxel, "ct-box before", gettext("Before")));
      }
      for (const box of this.boxes.get(viewport.volume.id) || []) {
        const editing = this.draft && this.draft.id === box.id;
        if (!editing && isShown(box) && this.inRange(box.voxel, viewport.z)) {
          add(this.rectangle(viewport, box.voxel, `ct-box label-${box.label} state-${box.state}`, this.config.labels[box.label]));
        }
      }
      const draft = this.draft;
      if (draft && draft.viewport === viewport) {
        const outside = this.inRange(draft.voxel, viewport.z) ? "" : " outside";
        add(this.rectangle(viewport, draft.voxel, `ct-box draft label-${draft.label}${outside}`, this.config.labels[draft.label]));
      }
    }
  }

  // Moves a box's caption down, row by row, while it overlaps a caption already placed.
  unstack(div, tags) {
    const tag = div.querySelector("span");
    if (!tag) return;
    for (let row = 0; row < 8; row += 1) {
      tag.style.transform = row ? `translateY(${row * 110}%)` : "";
      const rect = tag.getBoundingClientRect();
      const overlaps = tags.some((t) => rect.left < t.right && t.left < rect.right && rect.top < t.bottom && t.top < rect.bottom);
      if (!overlaps) break;
    }
    tags.push(tag.getBoundingClientRect());
  }

  rectangle(viewport, voxel, className, caption) {
    const div = document.createElement("div");
    div.className = className;
    div.style.left = `${(100 * voxel[0]) / viewport.nx}%`;
    div.style.top = `${(100 * voxel[1]) / viewport.ny}%`;
    div.style.width = `${(100 * (voxel[3] - voxel[0])) / viewport.nx}%`;
    div.style.height = `${(100 * (voxel[4] - voxel[1])) / viewport.ny}%`;
    const tag = document.createElement("span");
    tag.textContent = caption || "";
    div.append(tag);
    return div;
  }

  renderEditor() {
    const draft = this.draft;
    const editor = this.$("#box-editor");
    editor.hidden = !draft;
    if (!draft) return;
    const v = draft.voxel;
    const title = draft.id === null ? gettext("New box") : interpolate(gettext("Box #%(id)s"), { id: draft.id }, true);
    this.$("#box-title").textContent = `${title} · ${draft.viewport.volume.phaseName}`;
    this.$("#box-label").value = draft.label;
    this.$("#box-first").value = String(v[2] + 1);
    this.$("#box-last").value = String(v[5]);
    this.$("#box-first").max = this.$("#box-last").max = String(draft.viewport.nz);
    this.$("#box-extent").textContent = `x ${v[0]}–${v[3] - 1} · y ${v[1]}–${v[4] - 1} · ${sliceRange(v[2] + 1, v[5])}`;
    const version = interpolate(gettext("version %(version)s"), { version: draft.version }, true);
    const source = SOURCE_NAMES[draft.source] || draft.source;
    this.$("#box-state").textContent = draft.id === null ? "" : `${stateName(draft.state)} · ${version} · ${source}`;
    const saved = draft.id !== null;
    for (const id of ["#box-accept", "#box-reject", "#box-copy"]) this.$(id).disabled = !saved;
    const editable = this.mayEdit(draft);
    this.$("#box-save").disabled = !editable;
    this.$("#box-delete").hidden = saved && !(this.config.canDraw && this.isMine(draft) && draft.state === "proposed");
    this.$("#box-label").disabled = !editable;
  }

  renderList() {
    const list = this.$("#box-list");
    list.replaceChildren();
    const f = this.filters;
    let total = 0;
    const authors = new Set();
    for (const viewport of this.viewer.viewports) {
      for (const box of this.boxes.get(viewport.volume.id) || []) {
        total += 1;
        authors.add(box.author || "");
        const keep = (!f.state || box.state === f.state) && (!f.phase || viewport.volume.phase === f.phase)
          && (!f.label || box.label === f.label) && (f.author === undefined || f.author === "" || (box.author || "—") === f.author);
        if (keep) list.append(this.listRow(viewport, box));
      }
    }
    fillAuthorFilter(this.$('[data-filter="author"]'), authors);
    this.$("#box-count").textContent = interpolate(gettext("%(shown)s of %(total)s boxes"), { shown: list.children.length, total }, true);
    this.$("#box-empty").hidden = total > 0;
  }

  listRow(viewport, box) {
    const row = document.createElement("li");
    row.className = `box-row state-${box.state}`;
    if (this.draft && this.draft.id === box.id) row.classList.add("selected");
    Object.assign(row.dataset, { boxId: box.id, volume: viewport.volume.id, phase: viewport.volume.phase, label: box.label, voxel: JSON.stringify(box.voxel), mm: JSON.stringify(box.mm) });
    const title = document.createElement("button");
    title.type = "button";
    title.className = "link-button";
    title.textContent = `${this.config.labels[box.label] || box.label} · ${viewport.volume.phaseName} · ${sliceRange(box.voxel[2] + 1, box.voxel[5])}`;
    const by = document.createElement("span");
    by.className = "muted small";
    by.textContent = box.author || gettext("imported");
    title.addEventListener("click", () => this.jumpTo(viewport.volume.id, box.id));
    const state = document.createElement("span");
    state.className = `chip box-state-${box.state}`;
    state.textContent = stateName(box.state);
    const mm = document.createElement("div");
    mm.className = "muted small mm";
    mm.textContent = box.mm ? `${fmt(box.mm[0])} → ${fmt(box.mm[1])} mm` : "";
    row.append(title, state, by, mm);
    return row;
  }

  // --- controls ----------------------------------------------------------------------------

  bindPanel() {
    this.$("#box-draw").addEventListener("click", () => this.setDrawMode(!this.drawMode));
    this.$("#box-set-first").addEventListener("click", () => this.setSliceBound("first"));
    this.$("#box-set-last").addEventListener("click", () => this.setSliceBound("last"));
    this.$("#box-first").addEventListener("change", () => this.setSlicesFromInputs());
    this.$("#box-last").addEventListener("change", () => this.setSlicesFromInputs());
    this.$("#box-label").addEventListener("change", () => {
      if (this.draft) { this.draft.label = this.$("#box-label").value; this.renderOverlays(); }
    });
    this.$("#box-save").addEventListener("click", () => this.save());
    this.$("#box-cancel").addEventListener("click", () => this.cancel());
    this.$("#box-accept").addEventListener("click", () => this.review("accepted"));
    this.$("#box-reject").addEventListener("click", () => this.review("rejected"));
    this.$("#box-copy").addEventListener("click", () => this.copyToOtherPhases());
    this.$("#box-delete").addEventListener("click", () => this.remove());
    this.$("#box-undo").addEventListener("click", () => this.undo());
    bindFilters(this.panel, this.filters, () => this.renderList());
  }

  // Shift+arrows move the selected box by one voxel, Shift+Alt+arrows resize it (keyboard only).
  nudge(key, resize) {
    const draft = this.draft;
    if (!draft || !this.mayEdit(draft)) return false;
    nudgeRect(draft.voxel, [0, 1, 3, 4], key, 1, draft.viewport.nx, draft.viewport.ny, resize);
    this.renderOverlays();
    this.renderEditor();
    return true;
  }

  bindKeys() {
    // Capture phase: these keys must reach the box tool before the viewer's arrow keys.
    window.addEventListener("keydown", (event) => {
      if (event.target.matches?.("input:not([type=range]), select, textarea")) return;
      const arrow = event.key.startsWith("Arrow");
      if (arrow && event.shiftKey && this.nudge(event.key, event.altKey)) {
        event.preventDefault();
        event.stopPropagation();
      } else if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z" && this.config.canDraw) {
        event.preventDefault();
        this.undo();
      }
    }, true);
    document.addEventListener("keydown", (event) => {
      if (event.target.matches?.("input:not([type=range]), select, textarea") || event.ctrlKey || event.metaKey || event.altKey) return;
      const actions = {
        b: () => this.setDrawMode(!this.drawMode),
        f: () => this.setSliceBound("first"),
        l: () => this.setSliceBound("last"),
        a: () => this.review("accepted"),
        Enter: () => this.save(),
        Escape: () => { this.cancel(); this.setDrawMode(false); },
        Delete: () => this.remove(),
        Backspace: () => this.remove(),
      };
      const action = actions[event.key.length === 1 ? event.key.toLowerCase() : event.key];
      if (action) { event.preventDefault(); action(); }
    });
  }
}
