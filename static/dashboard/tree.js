// Queue tree: client-side search (keeps ancestors of matches visible and open) and expand/collapse.
// The tree refreshes itself (refresh.js swaps in a new #queue-tree): every lookup is made afresh,
// and a search in progress is applied again to the new tree.
(function () {
  "use strict";
  const input = document.getElementById("tree-search");
  const empty = document.getElementById("tree-empty");
  if (!input || !document.getElementById("queue-tree")) return;
  const all = () => Array.from(document.querySelectorAll("#queue-tree details.q"));
  let initiallyOpen = new Map(all().map((el) => [el.dataset.name, el.open]));

  function filter() {
    const term = input.value.trim().toLowerCase();
    const items = all();
    if (!term) {
      items.forEach((el) => {
        el.hidden = false;
        if (initiallyOpen.has(el.dataset.name)) el.open = initiallyOpen.get(el.dataset.name);
      });
      empty.hidden = true;
      return;
    }
    const visible = new Set();
    // Children come after parents in document order: walk backwards so a parent sees its children.
    for (let i = items.length - 1; i >= 0; i--) {
      const el = items[i];
      const own = el.dataset.name.includes(term);
      const kids = Array.from(el.children).filter((c) => c.matches("details.q"));
      const below = kids.some((c) => visible.has(c));
      if (own || below) visible.add(el);
      el.hidden = !(own || below);
      el.open = below;
    }
    empty.hidden = visible.size > 0;
  }

  input.addEventListener("input", filter);
  document.addEventListener("schedweb:refreshed", () => {
    if (input.value.trim()) filter();
    else initiallyOpen = new Map(all().map((el) => [el.dataset.name, el.open]));
  });
  document.querySelectorAll("[data-tree]").forEach((button) => {
    button.addEventListener("click", () => {
      const open = button.dataset.tree === "expand";
      all().forEach((el) => { if (!el.hidden) el.open = open; });
    });
  });
})();
