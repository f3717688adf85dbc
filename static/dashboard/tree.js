// Queue tree: client-side search (keeps ancestors of matches visible and open) and expand/collapse.
(function () {
  "use strict";
  const tree = document.getElementById("queue-tree");
  if (!tree) return;
  const input = document.getElementById("tree-search");
  const empty = document.getElementById("tree-empty");
  const all = Array.from(tree.querySelectorAll("details.q"));
  const initiallyOpen = new Map(all.map((el) => [el, el.open]));

  function filter() {
    const term = input.value.trim().toLowerCase();
    if (!term) {
      all.forEach((el) => { el.hidden = false; el.open = initiallyOpen.get(el); });
      empty.hidden = true;
      return;
    }
    const visible = new Set();
    // Children come after parents in document order: walk backwards so a parent sees its children.
    for (let i = all.length - 1; i >= 0; i--) {
      const el = all[i];
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
  document.querySelectorAll("[data-tree]").forEach((button) => {
    button.addEventListener("click", () => {
      const open = button.dataset.tree === "expand";
      all.forEach((el) => { if (!el.hidden) el.open = open; });
    });
  });
})();
