// Small progressive enhancements. Every feature works without this file.
// No inline script or handler anywhere (strict Content-Security-Policy): behaviour is wired here
// through data- attributes.
document.addEventListener("click", (event) => {
  const opener = event.target.closest("[data-open-dialog]");
  if (opener) {
    const dialog = document.getElementById(opener.dataset.openDialog);
    if (dialog) { event.preventDefault(); dialog.showModal(); }
  }
  const closer = event.target.closest("[data-close-dialog]");
  if (closer) { closer.closest("dialog")?.close(); }
  const copy = event.target.closest("[data-copy-target]");
  if (copy) {
    const el = document.getElementById(copy.dataset.copyTarget);
    if (el && navigator.clipboard) { navigator.clipboard.writeText(el.value ?? el.textContent); copy.textContent = "Copied"; }
  }
});

// <form data-confirm="Delete …?">: ask before submitting (replaces onsubmit="return confirm(…)").
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

// Dialogs that arrive with data-autoopen (an edit dialog fetched with hx-get, or a page
// re-rendered with form errors) open themselves.
document.addEventListener("DOMContentLoaded", () => {
  const open = (root) => {
    const found = root.matches && root.matches("dialog[data-autoopen]") ? [root] : [];
    const nested = root.querySelectorAll ? Array.from(root.querySelectorAll("dialog[data-autoopen]")) : [];
    found.concat(nested).forEach((dialog) => { if (!dialog.open) dialog.showModal(); });
  };
  if (window.htmx) { window.htmx.onLoad(open); } else { open(document); }
});
