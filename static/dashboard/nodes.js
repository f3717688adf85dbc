// Nodes page: draw the allocation heatmap from the figure embedded in the page.
(function () {
  "use strict";
  const el = document.getElementById("node-heatmap");
  const data = document.getElementById("node-heatmap-data");
  if (!el || !data) return;
  const figure = JSON.parse(data.textContent);
  Plotly.react(el, figure.data, figure.layout, { displayModeBar: false, responsive: true });
})();
