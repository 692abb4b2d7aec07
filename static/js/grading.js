// Keyboard-first side-by-side grading: a/b/t/w choose, arrows move the rubric row, 0-5 score it,
// Enter saves. The form works without this module; it only adds the keys and the row cursor.

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

  const scoreRow = (score) => {
    const row = rows[cursor];
    if (!row) return;
    const input = row.querySelector(`input[value="${score}"]`);
    if (input) input.checked = true;
    cursor = Math.min(cursor + 1, rows.length - 1);
    showCursor();
  };

  const isTyping = (target) =>
    target instanceof HTMLElement && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) && target.type !== "radio");

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || isTyping(event.target)) return;
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
