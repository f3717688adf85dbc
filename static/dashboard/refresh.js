// Auto-refresh. A region marked data-refresh polls its own page through htmx (hx-get, hx-trigger
// "every Ns, refresh": a "refresh" event on the region asks at once; hx-select picks the region's
// inner element out of the fresh page); this script
// keeps that polite: no request while the tab is hidden or the reader is using a form (a focused
// field, a form changed and not sent, an open confirmation), and <details> open before a swap
// (queue tree branches) stay open after it. A script file: the CSP allows no inline script.
(function () {
  "use strict";

  function editing() {
    const active = document.activeElement;
    if (active && active.matches("input, select, textarea") && active.closest("form")) return true;
    return document.querySelector("details.confirm[open], form[data-dirty]") !== null;
  }

  document.addEventListener("input", (event) => {
    const form = event.target.closest && event.target.closest("form");
    if (form) form.dataset.dirty = "1";
  });

  document.body.addEventListener("htmx:beforeRequest", (event) => {
    const region = event.detail.elt;
    if (!region.hasAttribute("data-refresh")) return;
    if (document.hidden || editing()) {
      event.preventDefault();
      region.dataset.refreshPaused = "1";
    } else {
      delete region.dataset.refreshPaused;
    }
  });

  const openBefore = new WeakMap();
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const region = event.detail.target;
    if (!region.hasAttribute || !region.hasAttribute("data-refresh")) return;
    openBefore.set(region, new Set(Array.from(region.querySelectorAll("details[data-name]"))
      .filter((d) => d.open).map((d) => d.dataset.name)));
  });
  document.body.addEventListener("htmx:afterSwap", (event) => {
    const region = event.detail.target;
    const open = region && openBefore.get(region);
    if (!open) return;
    region.querySelectorAll("details[data-name]").forEach((d) => { d.open = open.has(d.dataset.name); });
    region.dataset.refreshed = String(Number(region.dataset.refreshed || 0) + 1);
    region.dispatchEvent(new CustomEvent("schedweb:refreshed", { bubbles: true }));
  });
})();
