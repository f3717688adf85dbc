// Numbers for the stylesheet from data attributes: the Content-Security-Policy blocks style="..."
// attributes but not styles set through the CSSOM. data-w and data-x (percent of a bar) become
// --w and --x, data-depth and data-dims become --depth and --dims (dashboard.css uses them), on
// the page and on every fragment htmx swaps in.
(function () {
  "use strict";
  const NAMES = ["w", "x", "depth", "dims"];
  const SELECTOR = NAMES.map((name) => "[data-" + name + "]").join(",");

  function apply(root) {
    const elements = root.querySelectorAll ? Array.from(root.querySelectorAll(SELECTOR)) : [];
    if (root.matches && root.matches(SELECTOR)) elements.push(root);
    for (const el of elements) {
      for (const name of NAMES) {
        if (name in el.dataset) el.style.setProperty("--" + name, el.dataset[name]);
      }
    }
  }

  apply(document);
  if (window.htmx) window.htmx.onLoad(apply);
})();
