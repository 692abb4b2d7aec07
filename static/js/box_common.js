// What the box tools share (the CT tool, box_tool.js; the review page's images,
// image_box_tool.js; the case page's endoscopy image, image_boxes.js): the API call, which
// boxes are drawn, the undo history and the box list's author filter.

const { gettext, interpolate } = globalThis; // Django's JavaScript catalog (base.html)

export async function api(url, method, body, csrfToken) {
  const response = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken, Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(data.detail || JSON.stringify(data) || interpolate(gettext("The server answered HTTP %(status)s."), { status: response.status }, true));
    error.status = response.status;
    throw error;
  }
  return data;
}

// Rejected and withdrawn boxes are listed, not drawn.
export const isShown = (box) => box.state !== "rejected" && box.state !== "withdrawn";

export const DELETE_REFUSED = () => gettext("Only your own proposed box can be deleted; an adjudicator or a curator accepts or rejects the others.");
export const DELETED = () => gettext("Box deleted (withdrawn). Ctrl+Z brings it back.");

// The author filter's options: one per author of the listed boxes ("—": imported), the choice
// kept while its author is still there; rebuilt only when the authors change.
export function fillAuthorFilter(select, authors) {
  const names = [...new Set([...authors].map((a) => a || "—"))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join("\n") === names.join("\n")) return;
  const chosen = select.value;
  select.replaceChildren(select.options[0]);
  for (const name of names) select.append(new Option(name === "—" ? gettext("(imported)") : name, name));
  select.value = names.includes(chosen) ? chosen : "";
}

// The list's filters (`data-filter` selects under `root`) into `filters`, then `onChange()`.
export function bindFilters(root, filters, onChange) {
  root.querySelectorAll("[data-filter]").forEach((select) => select.addEventListener("change", () => {
    filters[select.dataset.filter] = select.value;
    onChange();
  }));
}

// Shift+arrows: move the rectangle by `step` in the arrow's direction inside width × height, or
// (`resize`) move its far corner. `at` gives the positions of x0, y0, x1, y1 in `v` (a 3D box
// keeps its z range at 2 and 5), which is changed in place.
export function nudgeRect(v, at, key, step, width, height, resize) {
  const [dx, dy] = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] }[key];
  const [x0, y0, x1, y1] = at;
  if (resize) {
    v[x1] = Math.min(Math.max(v[x1] + dx, v[x0] + 1), width);
    v[y1] = Math.min(Math.max(v[y1] + dy, v[y0] + 1), height);
  } else {
    const mx = Math.min(Math.max(dx, -v[x0]), width - v[x1]);
    const my = Math.min(Math.max(dy, -v[y0]), height - v[y1]);
    v[x0] += mx; v[x1] += mx; v[y0] += my; v[y1] += my;
  }
}

// Undo for box tools (2D and CT). Every change was a server write (a revision); undoing it is
// one more write based on the box's current version, never a local rollback: a box drawn is
// withdrawn, a box moved/resized/relabelled is changed back, a box deleted is restored.
export class BoxHistory {
  constructor({ boxUrl, csrfToken, current }) {
    this.boxUrl = boxUrl; // id => the box's API URL
    this.csrfToken = csrfToken;
    this.current = current; // id => the box as the tool holds it now (its version)
    this.stack = [];
  }

  get size() { return this.stack.length; }

  record(kind, before, after) {
    this.stack.push({ kind, before, after });
  }

  // Undo the last change; answers the box as the server now has it.
  async undo() {
    const last = this.stack[this.stack.length - 1];
    if (!last) return null;
    const box = this.current(last.after.id) || last.after;
    const url = this.boxUrl(box.id);
    let saved;
    if (last.kind === "create") {
      saved = await api(`${url}?version=${box.version}`, "DELETE", undefined, this.csrfToken);
    } else if (last.kind === "delete") {
      saved = await api(`${url}restore/`, "POST", { version: box.version }, this.csrfToken);
    } else {
      const body = { version: box.version, label: last.before.label, voxel: last.before.voxel };
      saved = await api(url, "PATCH", body, this.csrfToken);
    }
    this.stack.pop();
    return { kind: last.kind, box: saved };
  }
}
