// Undo for box tools (2D and CT). Every change was a server write (a revision); undoing it is
// one more write based on the box's current version, never a local rollback: a box drawn is
// withdrawn, a box moved/resized/relabelled is changed back, a box deleted is restored.

import { api } from "./box_tool.js";

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
