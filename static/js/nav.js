// The top bar's menus are <details> and work without this script. With it, opening one closes
// the others, and Escape or a click elsewhere closes it (focus goes back to its title).

function groups() {
  return [...document.querySelectorAll(".mainnav details.navgroup")];
}

document.addEventListener(
  "toggle",
  (event) => {
    const opened = event.target;
    if (!opened.matches?.("details.navgroup") || !opened.open) return;
    for (const other of groups()) if (other !== opened) other.open = false;
  },
  true,
);

document.addEventListener("click", (event) => {
  if (event.target.closest("details.navgroup")) return;
  for (const group of groups()) group.open = false;
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  const open = groups().find((group) => group.open);
  if (!open) return;
  open.open = false;
  open.querySelector("summary").focus();
});

document.documentElement.dataset.navReady = "ready";
