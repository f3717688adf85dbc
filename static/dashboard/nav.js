// The menu button of narrow screens: shows or hides the navigation (dashboard.css hides it below
// the wide layout unless the top bar has the class "open"). A script file, not an inline handler:
// the Content-Security-Policy allows no inline script.
(function () {
  "use strict";
  const bar = document.getElementById("topbar");
  const button = document.getElementById("menu-toggle");
  if (!bar || !button) return;

  function set(open) {
    bar.classList.toggle("open", open);
    button.setAttribute("aria-expanded", String(open));
  }

  button.addEventListener("click", () => set(!bar.classList.contains("open")));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && bar.classList.contains("open")) {
      set(false);
      button.focus();
    }
  });
})();
