// Pair review: clean and degraded images side by side with one shared zoom/pan state, so the
// same anatomy is always under the same point of both panes; a difference view; answer keys.

const root = document.querySelector("[data-pair]");
const MIN_ZOOM = 0.5;
const MAX_ZOOM = 40;

function lockedViewer(panes) {
  const layers = () => panes.flatMap((pane) => [...pane.querySelectorAll("img, canvas")]);
  const readout = root.querySelector("[data-zoom-readout]");
  const state = { zoom: 1, x: 0, y: 0, fit: 1 };
  const first = panes[0].querySelector("img");

  function fit() {
    const box = panes[0].getBoundingClientRect();
    const w = first.naturalWidth || 1;
    const h = first.naturalHeight || 1;
    state.fit = Math.min(box.width / w, box.height / h);
    state.zoom = 1;
    state.x = (box.width - w * state.fit) / 2;
    state.y = (box.height - h * state.fit) / 2;
    draw();
  }

  function draw() {
    const scale = state.fit * state.zoom;
    const transform = `translate(${state.x}px, ${state.y}px) scale(${scale})`;
    for (const layer of layers()) {
      layer.style.transform = transform;
      layer.classList.toggle("pixelated", scale > 2);
    }
    readout.textContent = `${Math.round(scale * 100)}%`;
  }

  // Zoom keeping the image point under (px, py) of the pane where it happened.
  function zoomAt(factor, px, py) {
    const next = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, state.zoom * factor));
    const ratio = next / state.zoom;
    state.x = px - (px - state.x) * ratio;
    state.y = py - (py - state.y) * ratio;
    state.zoom = next;
    draw();
  }

  function zoomCentre(factor) {
    const box = panes[0].getBoundingClientRect();
    zoomAt(factor, box.width / 2, box.height / 2);
  }

  for (const pane of panes) {
    pane.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        const box = pane.getBoundingClientRect();
        zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
      },
      { passive: false },
    );
    pane.addEventListener("pointerdown", (event) => {
      pane.setPointerCapture(event.pointerId);
      pane.classList.add("dragging");
      let lastX = event.clientX;
      let lastY = event.clientY;
      const move = (moveEvent) => {
        state.x += moveEvent.clientX - lastX;
        state.y += moveEvent.clientY - lastY;
        lastX = moveEvent.clientX;
        lastY = moveEvent.clientY;
        draw();
      };
      const up = () => {
        pane.classList.remove("dragging");
        pane.removeEventListener("pointermove", move);
        pane.removeEventListener("pointerup", up);
        pane.removeEventListener("pointercancel", up);
      };
      pane.addEventListener("pointermove", move);
      pane.addEventListener("pointerup", up);
      pane.addEventListener("pointercancel", up);
    });
    pane.addEventListener("dblclick", fit);
  }
  root.querySelector("[data-zoom-in]").addEventListener("click", () => zoomCentre(1.25));
  root.querySelector("[data-zoom-out]").addEventListener("click", () => zoomCentre(0.8));
  root.querySelector("[data-zoom-reset]").addEventListener("click", fit);
  window.addEventListener("resize", fit);
  return { fit, draw, zoomCentre };
}

// |A − B| per channel, amplified, drawn at the images' own resolution so it zooms like them.
function differenceView(panes, viewer) {
  const button = root.querySelector("[data-diff-toggle]");
  const gainSelect = root.querySelector("[data-diff-gain]");
  const images = panes.map((pane) => pane.querySelector("img"));
  const target = panes[panes.length - 1];
  let canvas = null;

  function pixels(image) {
    const scratch = document.createElement("canvas");
    scratch.width = image.naturalWidth;
    scratch.height = image.naturalHeight;
    const context = scratch.getContext("2d", { willReadFrequently: true });
    context.drawImage(image, 0, 0);
    return context.getImageData(0, 0, scratch.width, scratch.height);
  }

  function render() {
    const [a, b] = images.map(pixels);
    const gain = Number(gainSelect.value);
    const out = new ImageData(a.width, a.height);
    for (let i = 0; i < a.data.length; i += 4) {
      out.data[i] = Math.min(255, Math.abs(a.data[i] - b.data[i]) * gain);
      out.data[i + 1] = Math.min(255, Math.abs(a.data[i + 1] - b.data[i + 1]) * gain);
      out.data[i + 2] = Math.min(255, Math.abs(a.data[i + 2] - b.data[i + 2]) * gain);
      out.data[i + 3] = 255;
    }
    if (!canvas) {
      canvas = document.createElement("canvas");
      canvas.className = "diff-canvas";
      canvas.dataset.diffCanvas = "";
      target.appendChild(canvas);
    }
    canvas.width = a.width;
    canvas.height = a.height;
    canvas.getContext("2d").putImageData(out, 0, 0);
    viewer.draw();
  }

  function toggle() {
    if (images.some((image) => !image || !image.complete)) return;
    const on = !target.classList.contains("show-diff");
    if (on) render();
    target.classList.toggle("show-diff", on);
    button.setAttribute("aria-pressed", String(on));
  }

  button.addEventListener("click", toggle);
  gainSelect.addEventListener("change", () => {
    if (target.classList.contains("show-diff")) render();
  });
  return { toggle };
}

const ANSWER_KEYS = {
  y: ["answerable", "yes"],
  n: ["answerable", "no"],
  q: ["severity_judgement", "too_mild"],
  w: ["severity_judgement", "right"],
  e: ["severity_judgement", "too_strong"],
  arrowleft: ["identified_side", "left"],
  arrowright: ["identified_side", "right"],
};

function choose(form, name, value) {
  const input = form.querySelector(`input[name="${name}"][value="${value}"]`);
  if (input) input.checked = true;
}

function answerKeys(form, viewer, difference) {
  const started = performance.now();
  const timer = root.querySelector("[data-timer]");
  setInterval(() => {
    const seconds = Math.floor((performance.now() - started) / 1000);
    timer.textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
  }, 1000);
  form?.addEventListener("submit", () => {
    form.elements.seconds_spent.value = ((performance.now() - started) / 1000).toFixed(1);
  });
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest("textarea, input[type=text], select");
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "d") difference.toggle();
    else if (key === "0") viewer.fit();
    else if (key === "+" || key === "=") viewer.zoomCentre(1.25);
    else if (key === "-") viewer.zoomCentre(0.8);
    else if (form && ANSWER_KEYS[key]) choose(form, ...ANSWER_KEYS[key]);
    else if (form && /^[1-5]$/.test(key)) choose(form, "realism", key);
    else if (form && key === "enter") form.requestSubmit();
    else if (!form && key === "n") root.querySelector("[data-next]")?.click();
    else return;
    event.preventDefault();
  });
}

async function start() {
  const panes = [...root.querySelectorAll("[data-pair-pane]")];
  const images = panes.map((pane) => pane.querySelector("img")).filter(Boolean);
  await Promise.all(images.map((image) => image.decode().catch(() => null)));
  const viewer = lockedViewer(panes);
  viewer.fit();
  const difference = differenceView(panes, viewer);
  answerKeys(root.querySelector("[data-pair-form]"), viewer, difference);
  root.dataset.ready = "1";
}

if (root) start();
