// Keyboard-first side-by-side grading: a/b/t/w choose, arrows move the rubric row, 0-5 score it
// (and move to the next row, said in the status line), Enter saves. The form works without this
// module; it only adds the keys and the row cursor.

// Django's JavaScript catalog (base.html) defines gettext and interpolate before any module runs.
const { gettext, interpolate } = globalThis;

const form = document.getElementById("grade-form");

if (form) {
  const preferenceKeys = { a: "left", b: "right", t: "tie", w: "both_wrong" };
  const rows = Array.from(form.querySelectorAll(".rubric-row"));
  let cursor = 0;

  const showCursor = () => {
    rows.forEach((row, index) => row.classList.toggle("cursor", index === cursor));
  };

  const choosePreference = (value) => {
    const input = form.querySelector(`input[name="preference"][value="${value}"]`);
    if (input) {
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
  };

  const status = document.querySelector("[data-grade-status]");
  const rowName = (row) => {
    const side = row.closest("[data-side]")?.querySelector(".side-badge")?.textContent.trim() ?? "";
    return `${side} · ${row.querySelector("th")?.textContent.trim() ?? ""}`;
  };

  // A score key scores the row under the cursor and moves the cursor on: said aloud and on
  // screen, so that the next key's row is never a surprise.
  const scoreRow = (score) => {
    const row = rows[cursor];
    if (!row) return;
    const input = row.querySelector(`input[value="${score}"]`);
    if (input) input.checked = true;
    const scored = rowName(row);
    const last = cursor === rows.length - 1;
    cursor = Math.min(cursor + 1, rows.length - 1);
    showCursor();
    if (status) {
      status.textContent = last
        ? interpolate(gettext("%(row)s: %(score)s. That was the last row."), { row: scored, score }, true)
        : interpolate(gettext("%(row)s: %(score)s. Next row: %(next)s."), { row: scored, score, next: rowName(rows[cursor]) }, true);
    }
  };

  const isTyping = (target) =>
    target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) && target.type !== "radio");

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
    if (event.target instanceof Element && event.target.closest("[data-grade-case]")) return; // the CT's keys
    const key = event.key.toLowerCase();
    if (key in preferenceKeys) {
      choosePreference(preferenceKeys[key]);
    } else if (["0", "1", "2", "3", "4", "5"].includes(key) && rows[cursor]?.querySelector(`input[value="${key}"]`)) {
      scoreRow(key);
    } else if (key === "arrowdown" || key === "j") {
      cursor = Math.min(cursor + 1, rows.length - 1);
      showCursor();
    } else if (key === "arrowup" || key === "k") {
      cursor = Math.max(cursor - 1, 0);
      showCursor();
    } else if (key === "enter") {
      if (!form.querySelector('input[name="preference"]:checked')) {
        form.querySelector(".preference").classList.add("attention");
      } else {
        form.requestSubmit();
      }
    } else {
      return;
    }
    event.preventDefault();
  });

  rows.forEach((row, index) =>
    row.addEventListener("click", () => {
      cursor = index;
      showCursor();
    }),
  );
  showCursor();
  // Keys pressed before this module ran are lost; tests (and styles) can wait for this mark.
  form.dataset.keyboard = "ready";
}
