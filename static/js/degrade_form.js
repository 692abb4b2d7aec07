// The degrade form's only behaviour: check or clear every degradation kind at once.
const form = document.querySelector("[data-degrade-form]");
if (form) {
  const boxes = () => form.querySelectorAll("input[name=kinds]");
  const setAll = (checked) => boxes().forEach((box) => { box.checked = checked; });
  form.querySelector("[data-check-all]").addEventListener("click", () => setAll(true));
  form.querySelector("[data-check-none]").addEventListener("click", () => setAll(false));
}
