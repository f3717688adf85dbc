// Times in the reader's own zone. The server writes every time as
// <time class="local" datetime="ISO-8601 with offset">... UTC</time>: readable without script,
// and labelled UTC. Here each becomes the browser's local time with its zone named
// ("2026-12-01 20:40:02 CET"); a relative time (class "rel", e.g. "3 minutes ago") keeps its text
// and gets the absolute local time as its tooltip. Charts use toLocal() for their axes.
(function () {
  "use strict";
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  const pad = (n) => String(n).padStart(2, "0");

  function zoneAbbrev(date) {
    const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" })
      .formatToParts(date).find((p) => p.type === "timeZoneName");
    return part ? part.value : zone;
  }

  // "YYYY-MM-DD HH:MM:SS" in the browser's zone: the wall time Plotly draws as given.
  function toLocal(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function render(root) {
    (root || document).querySelectorAll("time.local[datetime]").forEach((el) => {
      if (el.dataset.localised) return;
      const d = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(d.getTime())) return;
      let text = toLocal(el.getAttribute("datetime"));
      if (el.dataset.format === "time") text = text.slice(11);
      else if (el.dataset.format === "minute") text = text.slice(0, 16);
      const absolute = text + " " + zoneAbbrev(d);
      if (el.classList.contains("rel")) el.title = absolute;
      else { el.textContent = absolute; el.title = zone; }
      el.dataset.localised = "1";
    });
  }

  window.schedwebTimes = { toLocal: toLocal, zone: zone };
  document.addEventListener("DOMContentLoaded", () => render(document));
  document.addEventListener("htmx:afterSwap", (event) => render(event.target));
})();
