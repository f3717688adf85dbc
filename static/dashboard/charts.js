// Queue page charts: fetch Plotly figures from the JSON endpoint and draw them with Plotly.react
// (which updates in place), again every REFRESH_MS and when another time range is picked.
(function () {
  "use strict";
  const REFRESH_MS = 10000;
  const box = document.getElementById("queue-charts");
  if (!box) return;
  const status = document.getElementById("chart-status");
  const config = { displayModeBar: false, responsive: true };

  // History figures come with UTC times (ISO-8601): Plotly draws a date as its wall time, so they
  // are turned into the browser's wall time first and the axis names the zone (times.js).
  function localTimes(layout, data) {
    const times = window.schedwebTimes;
    const iso = /^\d{4}-\d\d-\d\dT/;
    const dated = data.some((trace) => Array.isArray(trace.x) && iso.test(String(trace.x[0])));
    if (!times || !dated) return layout;
    for (const trace of data) {
      if (Array.isArray(trace.x)) trace.x = trace.x.map(times.toLocal);
    }
    const xaxis = Object.assign({}, layout.xaxis || {}, { title: { text: "time (" + times.zone + ")" } });
    if (Array.isArray(xaxis.range)) xaxis.range = xaxis.range.map(times.toLocal);
    return Object.assign({}, layout, { xaxis: xaxis });
  }

  async function load() {
    const url = box.dataset.url + "?range=" + encodeURIComponent(box.dataset.range);
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(response.status + " " + response.statusText);
      const body = await response.json();
      for (const [id, figure] of Object.entries(body.figures)) {
        const el = document.getElementById(id);
        if (el) await Plotly.react(el, figure.data, localTimes(figure.layout, figure.data), config);
      }
      // Long windows are downsampled (schedweb.dashboard.history): say so, with the bucket length.
      let text = body.samples + (body.samples === 1 ? " sample" : " samples");
      if (body.bucket_seconds) {
        text += ", " + body.points + " shown (newest of each " + Math.round(body.bucket_seconds) + " s)";
      }
      status.textContent = text;
      box.dataset.loaded = String(Number(box.dataset.loaded || 0) + 1);
    } catch (err) {
      status.textContent = "charts could not refresh (" + err.message + ")";
    }
  }

  document.querySelectorAll("#chart-ranges [data-range]").forEach((button) => {
    button.addEventListener("click", () => {
      box.dataset.range = button.dataset.range;
      document.querySelectorAll("#chart-ranges [data-range]").forEach((b) => b.classList.toggle("active", b === button));
      load();
    });
  });
  load();
  setInterval(load, REFRESH_MS);
})();
