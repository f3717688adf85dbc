// The queue edit form's Preview (templates/dashboard/partials/queue_edit.html): htmx posts the
// form to the preview view and swaps the edit section. A form with errors comes back as a 400
// (as the Save does): swap it all the same, so the errors show beside their fields. Then bring
// the preview (or the first error) into view: it sits below a long form.
(function () {
  "use strict";
  let previewing = false;

  function fromPreview(event) {
    const elt = event.detail.requestConfig ? event.detail.requestConfig.elt : event.detail.elt;
    return Boolean(elt && elt.id === "preview-queue");
  }

  document.body.addEventListener("htmx:beforeRequest", function (event) {
    previewing = fromPreview(event);
  });
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    if (previewing && event.detail.xhr.status === 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterSettle", function () {
    if (!previewing) return;
    previewing = false;
    const shown = document.getElementById("queue-preview") ||
      document.querySelector("#queue-admin .errorlist");
    if (shown) shown.scrollIntoView({block: "start"});
  });
})();
