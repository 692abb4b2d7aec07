// Multi-phase CT viewer: one canvas per phase, windowed in the browser from 16-bit voxels.
import { VoxelStore } from "./ct_voxels.js";

// Phases follow each other by patient position (LPS millimetres), never by slice index,
// because phases of one case may differ in origin, spacing and slice count.

const DRAG_WL_GAIN = 2; // HU per screen pixel for right-drag windowing
const ZOOM_STEP = 1.2;
const ZOOM_MAX = 16;
const SVG = "http://www.w3.org/2000/svg";

// Django's JavaScript catalog (base.html) defines gettext and interpolate before any module runs.
const { gettext, interpolate } = globalThis;
const HU_NONE = "HU —";

export function windowLabel(width, level) {
  return interpolate(gettext("W %(width)s / L %(level)s"), { width: Math.round(width), level: Math.round(level) }, true);
}

export function indexToLps(geometry, index) {
  const [sx, sy, sz] = geometry.spacing;
  const d = geometry.direction;
  const scaled = [index[0] * sx, index[1] * sy, index[2] * sz];
  return [0, 1, 2].map(
    (row) => geometry.origin[row] + d[row * 3] * scaled[0] + d[row * 3 + 1] * scaled[1] + d[row * 3 + 2] * scaled[2],
  );
}

function invert3(m) {
  const [a, b, c, d, e, f, g, h, i] = m;
  const det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g);
  return [
    (e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det,
    (f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det,
    (d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det,
  ];
}

export function lpsToIndex(geometry, point) {
  const inverse = geometry.inverse || (geometry.inverse = invert3(geometry.direction));
  const offset = [0, 1, 2].map((k) => point[k] - geometry.origin[k]);
  return [0, 1, 2].map(
    (row) => (inverse[row * 3] * offset[0] + inverse[row * 3 + 1] * offset[1] + inverse[row * 3 + 2] * offset[2]) / geometry.spacing[row],
  );
}

// One RGBA pixel per int16 value, indexed by its uint16 bit pattern: windowing a slice is then
// one table lookup per voxel. Same DICOM linear VOI function as the server's PNG renderer.
export function buildLut(width, level, lut = new Uint32Array(65536)) {
  const low = level - 0.5;
  const span = Math.max(width - 1, 1e-6);
  for (let bits = 0; bits < 65536; bits++) {
    const hu = bits < 32768 ? bits : bits - 65536;
    let grey = width <= 1 ? (hu > low ? 255 : 0) : Math.round(((hu - low) / span + 0.5) * 255);
    grey = grey < 0 ? 0 : grey > 255 ? 255 : grey;
    lut[bits] = (0xff000000 | grey * 0x10101) >>> 0; // little-endian ABGR: grey in R, G and B
  }
  return lut;
}

class Viewport {
  constructor(viewer, element, volume) {
    this.viewer = viewer;
    this.element = element;
    this.volume = volume;
    [this.nz, this.ny, this.nx] = volume.shape;
    this.z = volume.initialZ;
    this.store = new VoxelStore(this, volume);
    this.stage = element.querySelector(".ct-stage");
    this.canvas = element.querySelector("canvas.ct-canvas");
    this.fallback = element.querySelector("img.ct-fallback");
    this.slider = element.querySelector("input.ct-slider");
    this.field = (role) => element.querySelector(`[data-role=${role}]`); // roles are plain words
    this.context = this.canvas.getContext("2d");
    this.image = this.context.createImageData(this.nx, this.ny);
    this.pixels = new Uint32Array(this.image.data.buffer);
    this.aspect = (this.nx * volume.spacing[0]) / (this.ny * volume.spacing[1]);
    this.view = { s: 1, x: 0, y: 0 }; // zoom and pan of the stage, in screen pixels
    this.measures = []; // lengths drawn on this phase: {z, a: [x, y], b: [x, y]} in voxels
    this.marks = element.querySelector(".ct-marks");
    this.bindEvents();
    this.fit();
  }

  bindEvents() {
    this.slider.addEventListener("input", () => this.viewer.scrollTo(this, Number(this.slider.value)));
    // The wheel scrolls slices (as in every PACS); with Ctrl (or a trackpad pinch) it zooms.
    this.element.querySelector(".ct-cell").addEventListener("wheel", (event) => {
      event.preventDefault();
      if (event.ctrlKey || event.metaKey) this.zoomAt(event.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP, event.clientX, event.clientY);
      else this.viewer.scrollTo(this, this.z + Math.sign(event.deltaY));
    }, { passive: false });
    this.stage.addEventListener("contextmenu", (event) => event.preventDefault());
    this.stage.addEventListener("mousedown", (event) => this.viewer.pointerDown(this, event));
    this.stage.addEventListener("dblclick", (event) => {
      if (this.viewer.tool === "pan" && !event.target.closest(".ct-box")) this.viewer.toggleEnlarged(this);
    });
    this.stage.addEventListener("mousemove", (event) => this.showValue(event));
    this.stage.addEventListener("mouseleave", () => { this.field("hu").textContent = HU_NONE; });
    this.element.addEventListener("mouseenter", () => this.viewer.activate(this));
    new ResizeObserver(() => this.fit()).observe(this.element.querySelector(".ct-cell"));
  }

  // Fit the stage into its cell with the physical aspect ratio (pixel spacing may differ in x, y).
  fit() {
    const cell = this.element.querySelector(".ct-cell");
    const width = Math.min(cell.clientWidth, cell.clientHeight * this.aspect);
    this.stage.style.width = `${Math.floor(width)}px`;
    this.stage.style.height = `${Math.floor(width / this.aspect)}px`;
  }

  // --- zoom and pan: a CSS transform of the stage, so boxes and marks follow it -------------

  applyView() {
    const { s, x, y } = this.view;
    this.stage.style.transform = s === 1 && x === 0 && y === 0 ? "" : `translate(${x}px, ${y}px) scale(${s})`;
    this.element.dataset.zoom = s.toFixed(3);
  }

  zoomAt(factor, clientX, clientY) {
    const rect = this.stage.getBoundingClientRect();
    const s = Math.min(Math.max(this.view.s * factor, 1), ZOOM_MAX);
    // The stage's untransformed top-left; the point under the pointer stays under it.
    const left = rect.left - this.view.x;
    const top = rect.top - this.view.y;
    const px = (clientX ?? rect.left + rect.width / 2) - left;
    const py = (clientY ?? rect.top + rect.height / 2) - top;
    this.view.x = px - ((px - this.view.x) * s) / this.view.s;
    this.view.y = py - ((py - this.view.y) * s) / this.view.s;
    this.view.s = s;
    if (s === 1) this.view.x = this.view.y = 0;
    this.applyView();
  }

  resetView() {
    this.view = { s: 1, x: 0, y: 0 };
    this.applyView();
  }

  startPan(event) {
    const start = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y };
    this.stage.classList.add("panning");
    this.viewer.follow(
      (e) => {
        this.view.x = start.vx + e.clientX - start.x;
        this.view.y = start.vy + e.clientY - start.y;
        this.applyView();
      },
      () => this.stage.classList.remove("panning"),
    );
  }

  // --- length measurement (in-plane, on this slice) -----------------------------------------

  startMeasure(event) {
    const a = this.pointAt(event);
    const measure = { z: this.z, a, b: [...a] };
    this.measures.push(measure);
    this.viewer.follow((e) => {
      measure.b = this.pointAt(e);
      this.renderMarks();
    }, () => {
      // A click without a drag leaves no zero-length measure behind.
      if (this.lengthMm(measure) === 0) this.measures.pop();
      this.renderMarks();
    });
  }

  // Millimetres between two points of one slice: the phase's own pixel spacing in x and y.
  lengthMm(measure) {
    const dx = (measure.b[0] - measure.a[0]) * this.volume.spacing[0];
    const dy = (measure.b[1] - measure.a[1]) * this.volume.spacing[1];
    return Math.hypot(dx, dy);
  }

  // --- crosshair and measures, drawn over the slice --------------------------------------------

  renderMarks() {
    const marks = this.marks;
    if (!marks) return;
    marks.replaceChildren();
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", `0 0 ${this.nx} ${this.ny}`);
    svg.setAttribute("preserveAspectRatio", "none");
    const line = (x1, y1, x2, y2, className) => {
      const element = document.createElementNS(SVG, "line");
      Object.entries({ x1, y1, x2, y2 }).forEach(([key, value]) => element.setAttribute(key, String(value)));
      element.setAttribute("class", className);
      svg.append(element);
    };
    const tag = (x, y, text, className) => {
      const label = document.createElement("span");
      label.className = className;
      label.style.left = `${(100 * x) / this.nx}%`;
      label.style.top = `${(100 * y) / this.ny}%`;
      label.textContent = text;
      marks.append(label);
      return label;
    };
    const cross = this.viewer.cross && this.crossIndex();
    delete this.element.dataset.cross;
    if (cross) {
      const [cx, cy] = [cross[0] + 0.5, cross[1] + 0.5]; // voxel centres sit at index + ½
      line(cx, 0, cx, this.ny, "ct-cross");
      line(0, cy, this.nx, cy, "ct-cross");
      this.element.dataset.cross = JSON.stringify(cross.map((v) => Number(v.toFixed(2))));
    }
    const lengths = [];
    for (const measure of this.measures) {
      if (measure.z !== this.z) continue;
      line(...measure.a, ...measure.b, "ct-measure");
      const mm = this.lengthMm(measure);
      lengths.push(mm.toFixed(1));
      const label = tag(Math.max(measure.a[0], measure.b[0]), (measure.a[1] + measure.b[1]) / 2, `${mm.toFixed(1)} mm`, "ct-length");
      label.dataset.mm = mm.toFixed(3);
    }
    this.element.dataset.lengths = lengths.join(" ");
    this.hasMarks = Boolean(cross || lengths.length);
    const clear = this.viewer.root.querySelector("[data-ct-clear]");
    if (clear) clear.hidden = !this.viewer.viewports.some((v) => v.measures.length);
    marks.prepend(svg);
  }

  // The crosshair's patient point in this phase's (continuous) voxel indices.
  crossIndex() {
    const index = lpsToIndex(this.volume, this.viewer.cross);
    return [index[0], index[1]];
  }

  render() {
    const slice = this.store.slice(this.z);
    if (slice) {
      const lut = this.viewer.lut;
      const size = this.nx * this.ny;
      const out = this.pixels;
      for (let i = 0; i < size; i++) out[i] = lut[slice[i] & 0xffff]; // int16 bits → LUT index
      this.context.putImageData(this.image, 0, 0);
      this.paintedZ = this.z;
      if (this.canvas.hidden) {
        this.canvas.hidden = false;
        this.fallback.hidden = true;
        this.element.dataset.painted = String(performance.now());
      }
    } else if (this.canvas.hidden) {
      const { width, level } = this.viewer.window;
      this.fallback.src = `${this.volume.sliceUrl.replace("{z}", this.z)}?ww=${width}&wl=${level}`;
    } else {
      this.store.want(this.z); // painted when its slice arrives
    }
    this.element.dataset.shownZ = String(this.paintedZ ?? "");
    this.updateLabels();
    if (this.viewer.cross || this.measures.length || this.hasMarks) this.renderMarks();
  }

  centreLps(z = this.z) {
    return indexToLps(this.volume, [(this.nx - 1) / 2, (this.ny - 1) / 2, z]);
  }

  updateLabels() {
    const position = this.centreLps();
    this.field("slice").textContent = interpolate(gettext("Slice %(z)s/%(n)s"), { z: this.z + 1, n: this.nz }, true);
    this.field("position").textContent = `${position[2].toFixed(1)} mm`;
    const { width, level } = this.viewer.window;
    this.field("wl").textContent = interpolate(gettext("W %(width)s L %(level)s"), { width: Math.round(width), level: Math.round(level) }, true);
    this.slider.value = String(this.z);
    this.element.dataset.z = String(this.z);
    this.element.dataset.positionMm = position[2].toFixed(2);
  }

  // The pointer in continuous voxel coordinates (voxel i spans [i, i + 1)), zoom and pan included.
  pointAt(event) {
    const rect = this.stage.getBoundingClientRect();
    const x = ((event.clientX - rect.left) / rect.width) * this.nx;
    const y = ((event.clientY - rect.top) / rect.height) * this.ny;
    return [Math.min(Math.max(x, 0), this.nx), Math.min(Math.max(y, 0), this.ny)];
  }

  voxelAt(event) {
    const [x, y] = this.pointAt(event);
    return [Math.min(Math.floor(x), this.nx - 1), Math.min(Math.floor(y), this.ny - 1)];
  }

  showValue(event) {
    const [x, y] = this.voxelAt(event);
    const slice = this.store.slice(this.z);
    if (!slice) return;
    const value = slice[y * this.nx + x];
    this.field("hu").textContent = `HU ${value} · (${x}, ${y})`;
  }

  showProgress(text) {
    this.field("loading").textContent = text;
  }

  // The slice shown first, alone, then the chunks around it.
  async load() {
    await this.store.want(this.z);
    await this.store.streamed();
  }
}

export class CtViewer {
  constructor(root, config) {
    this.root = root;
    this.config = config;
    this.presets = config.presets;
    this.window = { width: this.presets[0].width, level: this.presets[0].level, name: this.presets[0].name };
    this.lut = buildLut(this.window.width, this.window.level);
    this.listeners = [];
    this.pointerHandlers = []; // the box tool's: (viewport, event) => true when it took the press
    this.tool = "pan"; // pan | crosshair | measure (the box tool has its own draw mode)
    this.cross = null; // the crosshair's patient point (LPS mm), shown on every phase
    this.help = root.querySelector("[data-ct-help]");
    this.viewports = config.volumes.map((volume) => {
      const element = root.querySelector(`.ct-viewport[data-volume="${volume.id}"]`);
      return new Viewport(this, element, volume);
    });
    this.active = this.viewports[0];
    this.bindKeys();
    this.bindTools();
    this.viewports.forEach((viewport) => viewport.updateLabels());
    this.showWindow();
    if (root.hasAttribute("data-fit-window")) {
      this.fitWindow();
      window.addEventListener("resize", () => this.fitWindow());
    }
  }

  // The grid takes the window's height below the viewer's top, so that every phase and its
  // slider is visible without scrolling (OHIF's layout); never less than a usable minimum.
  fitWindow() {
    const top = this.root.getBoundingClientRect().top + window.scrollY;
    const height = Math.max(window.innerHeight - top - 12, 420);
    this.root.style.height = `${Math.floor(height)}px`;
  }

  follow(onMove, onUp) {
    const up = (event) => {
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", up);
      if (onUp) onUp(event);
    };
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", up);
  }

  pointerDown(viewport, event) {
    this.activate(viewport);
    if (event.button === 2) return this.startWindowDrag(event);
    if (event.button === 1) {
      event.preventDefault();
      return viewport.startPan(event);
    }
    if (event.button !== 0) return;
    event.preventDefault();
    if (this.tool === "measure") return viewport.startMeasure(event);
    if (this.tool === "crosshair") return this.startCrosshair(viewport, event);
    if (this.pointerHandlers.some((handler) => handler(viewport, event))) return;
    viewport.startPan(event);
  }

  startCrosshair(viewport, event) {
    const place = (e) => {
      const [x, y] = viewport.pointAt(e);
      this.cross = indexToLps(viewport.volume, [x - 0.5, y - 0.5, viewport.z]);
      this.viewports.forEach((v) => v.renderMarks());
    };
    place(event);
    this.follow(place);
  }

  setTool(tool) {
    this.tool = this.tool === tool ? "pan" : tool;
    if (this.tool !== "crosshair" && tool === "crosshair") this.cross = null;
    this.root.dataset.tool = this.tool;
    this.root.querySelectorAll("[data-tool]").forEach((button) => {
      const on = button.dataset.tool === this.tool;
      button.classList.toggle("on", on);
      button.setAttribute("aria-pressed", String(on));
    });
    this.viewports.forEach((v) => v.renderMarks());
  }

  toggleEnlarged(viewport = this.active) {
    const enlarged = this.enlarged === viewport ? null : viewport;
    this.enlarged = enlarged;
    this.root.classList.toggle("enlarged", Boolean(enlarged));
    this.viewports.forEach((v) => v.element.classList.toggle("enlarged", v === enlarged));
    this.activate(viewport);
    this.viewports.forEach((v) => v.fit());
  }

  toggleHelp(force) {
    if (!this.help) return;
    this.help.hidden = force === undefined ? !this.help.hidden : !force;
    if (!this.help.hidden) this.help.querySelector("button")?.focus();
  }

  clearMeasures() {
    this.viewports.forEach((v) => { v.measures = []; v.renderMarks(); });
  }

  bindTools() {
    this.root.querySelectorAll("[data-tool]").forEach((button) => {
      button.addEventListener("click", () => this.setTool(button.dataset.tool));
    });
    this.root.querySelector("[data-ct-reset]")?.addEventListener("click", () => this.viewports.forEach((v) => v.resetView()));
    this.root.querySelector("[data-ct-clear]")?.addEventListener("click", () => this.clearMeasures());
    this.root.querySelectorAll("[data-ct-help-toggle]").forEach((button) => button.addEventListener("click", () => this.toggleHelp()));
  }

  onSlice(listener) { this.listeners.push(listener); }

  activate(viewport) {
    if (this.active === viewport) return;
    this.active = viewport;
    this.viewports.forEach((v) => v.element.classList.toggle("active", v === viewport));
  }

  // Scroll one phase; the others go to the slice nearest the same patient position.
  scrollTo(source, z) {
    const clamped = Math.min(Math.max(Math.round(z), 0), source.nz - 1);
    source.z = clamped;
    const point = source.centreLps(clamped);
    for (const viewport of this.viewports) {
      if (viewport !== source) {
        const index = lpsToIndex(viewport.volume, point);
        viewport.z = Math.min(Math.max(Math.round(index[2]), 0), viewport.nz - 1);
      }
    }
    this.renderAll();
  }

  renderAll() {
    this.viewports.forEach((viewport) => viewport.render());
    this.listeners.forEach((listener) => listener());
  }

  setWindow(width, level, name = "") {
    this.window = { width: Math.max(1, width), level, name };
    buildLut(this.window.width, this.window.level, this.lut);
    this.showWindow();
    this.renderAll();
  }

  showWindow() {
    const label = this.root.querySelector("#ct-wl");
    const values = windowLabel(this.window.width, this.window.level);
    label.textContent = this.window.name ? `${this.window.name} · ${values}` : values;
    this.root.querySelectorAll("[data-preset]").forEach((button) => {
      button.classList.toggle("on", button.dataset.preset === this.window.name);
    });
  }

  applyPreset(index) {
    const preset = this.presets[index];
    if (preset) this.setWindow(preset.width, preset.level, preset.name);
  }

  startWindowDrag(event) {
    const start = { x: event.clientX, y: event.clientY, ...this.window };
    const move = (e) => this.setWindow(
      start.width + (e.clientX - start.x) * DRAG_WL_GAIN,
      start.level - (e.clientY - start.y) * DRAG_WL_GAIN,
    );
    const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
  }

  bindKeys() {
    this.root.querySelectorAll("[data-preset]").forEach((button, index) => {
      button.addEventListener("click", () => this.applyPreset(index));
    });
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      const typing = target.matches?.("input:not([type=range]), select, textarea");
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      // A page whose own keys share the digits (grading) hands them to the viewer only while
      // the focus is inside `keyScope`.
      if (this.config.keyScope && !target.closest?.(this.config.keyScope)) return;
      if (event.key === "?") {
        // A page with its own key list (review, adjudication) answers "?" with it; that list
        // links to the viewer's, which its toolbar's ? button also opens.
        if (document.querySelector("[data-help]")) return;
        event.preventDefault();
        return this.toggleHelp();
      }
      if (event.key === "Escape" && this.help && !this.help.hidden) return this.toggleHelp(false);
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      const actions = {
        x: () => this.setTool("crosshair"),
        m: () => this.setTool("measure"),
        e: () => this.toggleEnlarged(),
        "+": () => this.active.zoomAt(ZOOM_STEP),
        "=": () => this.active.zoomAt(ZOOM_STEP),
        "-": () => this.active.zoomAt(1 / ZOOM_STEP),
        0: () => this.active.resetView(),
      };
      if (event.key >= "1" && event.key <= "5") {
        this.applyPreset(Number(event.key) - 1);
      } else if (event.key === "ArrowUp" || event.key === "ArrowDown") {
        event.preventDefault();
        this.scrollTo(this.active, this.active.z + (event.key === "ArrowDown" ? 1 : -1));
      } else if (actions[key]) {
        event.preventDefault();
        actions[key]();
      } else if (event.key === "Escape" && this.tool !== "pan") {
        this.setTool(this.tool);
      }
    });
  }

  // Every phase's first slice, then every phase's chunks; `data-loaded` once each phase holds
  // the chunks around its slice, `data-painted` on a viewport once its first slice is shown.
  async loadAll() {
    await Promise.all(this.viewports.map((viewport) => viewport.load()));
    this.root.dataset.loaded = "true";
  }
}
