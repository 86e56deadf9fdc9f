// Sort a table by clicking a header with data-sort="number|text". Cells may carry data-value.
(() => {
  if (window.__sortableBound) return;
  window.__sortableBound = true;
  document.addEventListener("click", (event) => {
    const th = event.target.closest("table[data-sortable] th[data-sort]");
    if (!th) return;
    const table = th.closest("table");
    const body = table.tBodies[0];
    const index = Array.from(th.parentNode.children).indexOf(th);
    const numeric = th.dataset.sort === "number";
    const descending = th.getAttribute("aria-sort") === "ascending";
    table.querySelectorAll("th[aria-sort]").forEach((other) => other.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    const value = (row) => {
      const cell = row.children[index];
      const raw = cell ? (cell.dataset.value ?? cell.textContent.trim()) : "";
      return numeric ? parseFloat(raw) || 0 : raw.toLowerCase();
    };
    const rows = Array.from(body.rows).sort((a, b) => {
      const x = value(a), y = value(b);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    rows.forEach((row) => body.appendChild(row));
  });
})();
