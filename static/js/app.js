// Small progressive enhancements. Every feature works without this file.
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
