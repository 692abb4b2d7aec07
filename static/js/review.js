// Keyboard-first review, adjudication and human baseline: verdict keys, edit and reject modes,
// option editing, zoom and pan on the images, and the time spent on each item.
// The server renders everything; htmx swaps the work area (#review-root) after each decision.

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const timer = { start: performance.now(), hiddenAt: null, paused: 0 };

function resetTimer() {
  timer.start = performance.now();
  timer.hiddenAt = document.hidden ? performance.now() : null;
  timer.paused = 0;
}

// A hidden tab is not time spent on the item.
document.addEventListener("visibilitychange", () => {
  if (document.hidden) timer.hiddenAt = performance.now();
  else if (timer.hiddenAt !== null) {
    timer.paused += performance.now() - timer.hiddenAt;
    timer.hiddenAt = null;
  }
});

function secondsSpent() {
  const hidden = timer.hiddenAt !== null ? performance.now() - timer.hiddenAt : 0;
  return Math.max(0, (performance.now() - timer.start - timer.paused - hidden) / 1000);
}

setInterval(() => {
  const el = document.querySelector("[data-timer]");
  if (!el) return;
  const s = Math.floor(secondsSpent());
  el.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}, 1000);

const activeForm = () =>
  document.querySelector(
    "[data-review-form], [data-adjudicate-form], [data-baseline-form], [data-edit-form]",
  );

// The first field of the item kind's edit panel: the question, the label, the report, x0.
const FIRST_EDIT_FIELD =
  ".edit-mode textarea, .edit-mode select, .edit-mode input:not([type=hidden]):not([type=radio])";

function setMode(form, mode) {
  form.dataset.mode = mode;
  disarm(form);
  if (mode === "edit") {
    // Beside a CT the decision side scrolls by itself: bring the whole edit panel into it,
    // not only its first field (a 3D box's z row would stay below the fold at 1024×768).
    if (form.closest(".review-side")) form.scrollIntoView({ block: "nearest" });
    form.querySelector(FIRST_EDIT_FIELD)?.focus({ preventScroll: Boolean(form.closest(".review-side")) });
  }
  if (mode === "reject") form.querySelector("input[name=reason]")?.focus();
  if (mode === "view") document.activeElement?.blur();
}

// --- options editor: add, remove, reorder; the checked row is the answer --------------------

function relabel(list) {
  list.querySelectorAll("[data-opt-row]").forEach((row, i) => {
    row.querySelector("[data-letter]").textContent = LETTERS[i];
    row.querySelector("input[type=radio]").value = String(i);
  });
}

function optionAction(button) {
  const list = button.closest("form").querySelector("[data-options]");
  const row = button.closest("[data-opt-row]");
  const action = button.dataset.opt;
  if (action === "add") {
    const fresh = list.querySelector("[data-opt-row]").cloneNode(true);
    fresh.querySelector("input[type=text]").value = "";
    fresh.querySelector("input[type=radio]").checked = false;
    list.append(fresh);
    fresh.querySelector("input[type=text]").focus();
  } else if (action === "remove" && list.children.length > 2) {
    row.remove();
  } else if (action === "up" && row.previousElementSibling) {
    row.previousElementSibling.before(row);
  } else if (action === "down" && row.nextElementSibling) {
    row.nextElementSibling.after(row);
  }
  relabel(list);
}

function answerFromRows(form) {
  const rows = [...form.querySelectorAll("[data-opt-row]")];
  const checked = rows.findIndex((row) => row.querySelector("input[type=radio]").checked);
  if (checked >= 0 && form.elements.answer) form.elements.answer.value = LETTERS[checked];
}

// --- submitting ---------------------------------------------------------------------------

function stamp(form) {
  if (form.elements.seconds_spent) form.elements.seconds_spent.value = secondsSpent().toFixed(1);
  if (form.dataset.mode === "edit") answerFromRows(form);
}

function submitWith(form, name, value, extra = {}) {
  form.elements[name].value = value;
  for (const [key, val] of Object.entries(extra)) form.elements[key].value = val;
  stamp(form);
  // htmx wires freshly swapped forms when it settles; a key pressed before that must not fall
  // back to a full-page submit. process() is idempotent.
  window.htmx?.process(form);
  form.requestSubmit();
}

document.addEventListener("click", (event) => {
  const target = event.target.closest("button");
  if (!target) return;
  const form = target.closest("form");
  if (target.matches("[data-help-toggle]")) return toggleHelp();
  if (target.matches("[data-show-ct-keys]")) {
    toggleHelp(false);
    return document.querySelector("[data-ct-help-toggle]")?.click();
  }
  if (target.matches("[data-case-wide]")) return toggleCaseWide(target);
  if (target.dataset.opt) return optionAction(target);
  if (target.dataset.modeSet && form) return setMode(form, target.dataset.modeSet);
  if (target.dataset.verdict && form) {
    form.elements.verdict.value = target.dataset.verdict;
    stamp(form);
  }
  if (target.dataset.choice && form) {
    form.elements.choice.value = target.dataset.choice;
    form.elements.reject.value = target.hasAttribute("data-reject") ? "on" : "";
    stamp(form);
  }
  if (target.dataset.letter && form) stamp(form);
});

// The case (CT) over the whole width, and back to the decision beside it.
function toggleCaseWide(button) {
  const grid = button.closest(".review-grid");
  const wide = grid.classList.toggle("case-wide");
  button.setAttribute("aria-pressed", String(wide));
  window.dispatchEvent(new Event("resize")); // the CT viewer fits its height to the window
}

// --- keyboard -----------------------------------------------------------------------------

function toggleHelp(force) {
  const help = document.querySelector("[data-help]");
  if (help) help.hidden = force === undefined ? !help.hidden : !force;
}

function isTyping(el) {
  if (!el) return false;
  if (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
  return el.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(el.type);
}

// With a case panel on the page, digits pick CT window presets and A/B/F/L/E/X/M drive the
// viewer and its box tool (ct_viewer.js, box_tool.js): a decision there is the same key with
// Shift (Shift+1 accept, Shift+A take A), read before the viewer sees it (see below).
const caseKeys = () => document.querySelector("[data-case-panel]") !== null;

// The decision key a Shift press on a case page stands for: the physical key, so Shift+1 is
// "1" whatever the keyboard layout prints for it.
function shiftedKey(event) {
  const code = event.code || "";
  if (code.startsWith("Digit")) return code.slice(5);
  if (code.startsWith("Key")) return code.slice(3).toLowerCase();
  return null;
}

function reviewKeys(form, event, key) {
  const mode = form.dataset.mode;
  if (mode === "view") {
    if (key === "1") return submitWith(form, "verdict", "accept"), true;
    const edit = form.querySelector(".verdicts [data-mode-set=edit]");
    if (key === "2" && edit) return setMode(form, "edit"), true;
    if (key === "3") return setMode(form, "reject"), true;
    return false;
  }
  if (mode === "reject") {
    const reasons = form.querySelectorAll("input[name=reason]");
    const n = Number.parseInt(key, 10);
    if (n >= 1 && n <= reasons.length) return (reasons[n - 1].checked = true), true;
    if (event.key === "Enter" && form.querySelector("input[name=reason]:checked")) {
      return submitWith(form, "verdict", "reject"), true;
    }
  }
  if (mode === "edit" && event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    return submitWith(form, "verdict", "edit"), true;
  }
  return false;
}

// Taking A or B by key settles the dispute: the first press asks, the same key again takes it,
// any other key (or Esc) lets go. A click on the button takes it at once.
function disarm(form) {
  if (!form?.dataset.armed) return;
  delete form.dataset.armed;
  form.querySelectorAll("[data-take-confirm], [data-take-for]").forEach((el) => (el.hidden = true));
}

function armOrTake(form, choice) {
  const take = form.querySelector(`.verdicts [data-choice="${choice}"]`);
  if (!take) return false;
  if (form.dataset.armed === choice) {
    disarm(form);
    take.click();
    return true;
  }
  disarm(form);
  form.dataset.armed = choice;
  form.querySelector("[data-take-confirm]").hidden = false;
  form.querySelector(`[data-take-for="${choice}"]`).hidden = false;
  return true;
}

function adjudicateKeys(form, event, key) {
  const mode = form.dataset.mode;
  if (mode === "view") {
    if (key === "a" || key === "b") return armOrTake(form, key);
    disarm(form);
    if (key === "w") return setMode(form, "edit"), true;
    if (key === "x") return setMode(form, "reject"), true;
    return false;
  }
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey || mode === "reject")) {
    form.querySelector(mode === "reject" ? "[data-reject]" : ".edit-only").click();
    return true;
  }
  return false;
}

// The curator's correction page: Ctrl+Enter saves (the server reads the checked row).
function editKeys(form, event) {
  if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return false;
  form.querySelector("[data-save]:not([disabled])")?.click();
  return true;
}

function baselineKeys(form, event) {
  const key = event.key.toUpperCase();
  const button = key.length === 1 && form.querySelector(`[data-letter="${key}"]`);
  if (!button) return false;
  button.click();
  return true;
}

document.addEventListener("keydown", (event) => {
  const help = document.querySelector("[data-help]");
  if (event.key === "?" || (event.key === "Escape" && help && !help.hidden)) {
    if (event.key === "?" && isTyping(event.target)) return;
    toggleHelp();
    return event.preventDefault();
  }
  const form = activeForm();
  if (event.key === "Escape" && form?.dataset.mode && form.dataset.mode !== "view") {
    setMode(form, "view");
    return event.preventDefault();
  }
  if (MODIFIERS.includes(event.key)) return; // Shift of Shift+A is not "another key"
  if (event.key === "Escape" && form?.dataset.armed) {
    disarm(form);
    return event.preventDefault();
  }
  if (event.altKey || (isTyping(event.target) && !(event.key === "Enter" && event.ctrlKey))) return;
  if (form && !event.repeat) {
    // On a case page the plain keys are the viewer's: only Enter and Ctrl+Enter decide here.
    const key = caseKeys() ? null : event.key.toLowerCase();
    if (handlerOf(form)(form, event, key)) return event.preventDefault();
  }
  if (event.ctrlKey || event.metaKey) return;
  if (event.key === "n" || event.key === "N" || event.key === "ArrowRight") {
    const next = document.querySelector("[data-next]");
    if (next) {
      next.click();
      return event.preventDefault();
    }
  }
  if (event.key === "c" || event.key === "C") {
    const change = document.querySelector("[data-change-verdict]");
    if (change) {
      change.click();
      return event.preventDefault();
    }
  }
  if (event.key === "+" || event.key === "=") zoomAll(1.25);
  else if (event.key === "-" || event.key === "_") zoomAll(0.8);
  else if (event.key === "0") zoomAll(0);
});
const MODIFIERS = ["Shift", "Control", "Alt", "Meta", "AltGraph", "CapsLock"];

function handlerOf(form) {
  if (form.matches("[data-review-form]")) return reviewKeys;
  if (form.matches("[data-adjudicate-form]")) return adjudicateKeys;
  return form.matches("[data-edit-form]") ? editKeys : baselineKeys;
}

// Shift + a decision key on a case page, in the capture phase: the viewer and the box tool
// (which read A, B, F, L and the digits whatever the Shift) never see it.
window.addEventListener(
  "keydown",
  (event) => {
    if (!caseKeys() || !event.shiftKey || event.ctrlKey || event.metaKey || event.altKey) return;
    const form = activeForm();
    const key = shiftedKey(event);
    if (!form || !key || event.repeat || isTyping(event.target)) return;
    if (handlerOf(form)(form, event, key)) {
      event.preventDefault();
      event.stopPropagation();
    }
  },
  true,
);

// Keys pressed before this module ran are lost; tests can wait for this mark after a page load.
document.documentElement.dataset.reviewKeys = "ready";

// --- zoom and pan -------------------------------------------------------------------------

function apply(pane) {
  const z = pane._zoom;
  // The image and its box layer move together (static/js/image_box_tool.js).
  const content = pane.querySelector(".zoom-content") || pane.querySelector("img");
  content.style.transform = `translate(${z.x}px, ${z.y}px) scale(${z.s})`;
}

function zoomAt(pane, factor, px, py) {
  const z = pane._zoom;
  const s = Math.min(20, Math.max(1, z.s * factor));
  const f = s / z.s;
  // Keep the point under the cursor where it is.
  z.x = px - (px - z.x) * f;
  z.y = py - (py - z.y) * f;
  z.s = s;
  if (s === 1) Object.assign(z, { x: 0, y: 0 });
  apply(pane);
}

function zoomAll(factor) {
  document.querySelectorAll("[data-zoom-pane]").forEach((pane) => {
    if (!pane._zoom) return;
    if (factor === 0) Object.assign(pane._zoom, { s: 1, x: 0, y: 0 });
    else zoomAt(pane, factor, pane.clientWidth / 2, pane.clientHeight / 2);
    apply(pane);
  });
}

function initPane(pane) {
  if (pane._zoom) return;
  pane._zoom = { s: 1, x: 0, y: 0 };
  let drag = null;
  pane.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const box = pane.getBoundingClientRect();
      zoomAt(pane, e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - box.left, e.clientY - box.top);
    },
    { passive: false },
  );
  pane.addEventListener("pointerdown", (e) => {
    // The box tool takes presses on a box, its handles, and any press while drawing.
    if (e.button !== 0 || e.target.closest("[data-box-ui]") || pane.dataset.drawing === "true") return;
    drag = { x: e.clientX, y: e.clientY, ox: pane._zoom.x, oy: pane._zoom.y };
    pane.setPointerCapture(e.pointerId);
    pane.classList.add("dragging");
  });
  pane.addEventListener("pointermove", (e) => {
    if (!drag) return;
    pane._zoom.x = drag.ox + e.clientX - drag.x;
    pane._zoom.y = drag.oy + e.clientY - drag.y;
    apply(pane);
  });
  const stop = () => {
    drag = null;
    pane.classList.remove("dragging");
  };
  pane.addEventListener("pointerup", stop);
  pane.addEventListener("pointercancel", stop);
  pane.addEventListener("dblclick", (e) => {
    if (e.target.closest("[data-box-ui]")) return;
    Object.assign(pane._zoom, { s: 1, x: 0, y: 0 });
    apply(pane);
  });
}

function init() {
  document.querySelectorAll("[data-zoom-pane]").forEach(initPane);
  resetTimer();
}

// A refused decision (400, 403: not yours to take) or a stale version (409) shows its message
// in the work area, with the draft kept; never a bare error page.
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if (status === 400 || status === 403 || status === 409) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
document.addEventListener("htmx:afterSwap", init);
// A page restored from the back/forward cache may show an item decided since: ask the server.
window.addEventListener("pageshow", (event) => {
  if (event.persisted) window.location.reload();
});
init();
