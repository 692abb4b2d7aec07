// Keyboard moves through the suspects: j / k next and previous, o (or Enter) opens the item,
// r opens its review when the viewer has one. Works again after htmx swaps the results.
const suspects = () => [...document.querySelectorAll("#results .suspect")];

function move(step) {
  const all = suspects();
  if (!all.length) return;
  const current = all.indexOf(document.activeElement);
  const next = all[Math.min(all.length - 1, Math.max(0, current + step))] || all[0];
  next.focus();
  next.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

document.addEventListener("keydown", (event) => {
  if (event.metaKey || event.ctrlKey || event.altKey) return;
  if (event.target.closest("input, select, textarea")) return;
  const focused = document.activeElement?.closest?.(".suspect");
  if (event.key === "j") move(1);
  else if (event.key === "k") move(-1);
  else if ((event.key === "o" || event.key === "Enter") && focused && event.target === focused) {
    window.location.href = focused.dataset.open;
  } else if (event.key === "r" && focused?.dataset.review) {
    window.location.href = focused.dataset.review;
  } else return;
  event.preventDefault();
});
