// The top bar keeps every link on one line: links that do not fit (users with several roles,
// narrow windows) move, from the last one back, into the "More" menu; they come back when
// the window grows. Without this script the bar scrolls sideways instead.

function fit() {
  const nav = document.querySelector(".mainnav");
  const more = document.querySelector("[data-nav-more]");
  const menu = document.querySelector("[data-nav-more-menu]");
  if (!nav || !more || !menu) return;
  // Start from every link in the bar, in its order, then move the overflow out.
  nav.append(...menu.children);
  more.hidden = true;
  const links = [...nav.children];
  let moved = 0;
  while (nav.scrollWidth > nav.clientWidth && moved < links.length - 1) {
    more.hidden = false; // the menu button takes room too: check again with it shown
    menu.prepend(links[links.length - 1 - moved]);
    moved += 1;
  }
  if (!moved) more.open = false;
}

let pending = 0;
window.addEventListener("resize", () => {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(fit);
});

// A click elsewhere, a chosen link or Escape closes the menu.
document.addEventListener("click", (event) => {
  const more = document.querySelector("[data-nav-more]");
  if (more?.open && !event.target.closest("summary")) more.open = false;
});
document.addEventListener("keydown", (event) => {
  const more = document.querySelector("[data-nav-more]");
  if (event.key === "Escape" && more?.open) more.open = false;
});

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fit);
else fit();
// Web fonts or the language switch can change the links' widths after the first layout.
window.addEventListener("load", fit);
document.documentElement.dataset.navFitted = "ready";
