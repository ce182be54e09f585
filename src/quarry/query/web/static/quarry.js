// The web reader's few behaviours that need a script; loaded from the node itself (no inline script:
// the Content-Security-Policy forbids it). Everything works without it but copying.
"use strict";

// A button with data-copy copies its text to the clipboard (the resume command, a ref).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  navigator.clipboard.writeText(button.dataset.copy).then(
    () => { button.dataset.copied = "yes"; button.textContent = "Copied"; },
    () => { button.textContent = "Copy failed: select the text"; },
  );
});

// A hit's message is the page's #fragment: once events paged in by htmx contain it, scroll it into view.
document.addEventListener("htmx:afterSettle", () => {
  const id = decodeURIComponent(window.location.hash.slice(1));
  const target = id && document.getElementById(id);
  if (target && !target.dataset.shown) {
    target.dataset.shown = "yes";
    target.scrollIntoView({ block: "center" });
  }
});
