// Run pages: keyboard navigation of the results matrix, the focused cell kept across live
// updates, and single-key shortcuts on the replay (p / n: previous / next case, o: the same case
// in the other lane, s: side by side). Everything also works without this file: cells and
// shortcuts are plain links. No inline script anywhere (strict Content-Security-Policy).
// Also the matrix's "Columns" menu: lanes a reader hides stay hidden across live updates and
// page loads of the same run (sessionStorage). And the results filter a reader changed last is the
// one shown, even when a live tick sent under an older filter arrives after the change.
(() => {
  if (window.__runsBound) return;
  window.__runsBound = true;

  const MOVES = {
    j: [1, 0], ArrowDown: [1, 0], k: [-1, 0], ArrowUp: [-1, 0],
    l: [0, 1], ArrowRight: [0, 1], h: [0, -1], ArrowLeft: [0, -1],
  };
  let remembered = null; // data-cell of the matrix's active cell (survives a live update)
  let hadFocus = false;

  const typing = (el) => !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  const matrixOf = () => document.querySelector("[data-matrix]");
  const cellsOf = (matrix) => Array.from(matrix.querySelectorAll("a.cell"));
  const cellAt = (matrix, row, col) => matrix.querySelector(`a.cell[data-row="${row}"][data-col="${col}"]`);

  const activate = (matrix, cell, focus = true) => {
    cellsOf(matrix).forEach((c) => { c.tabIndex = -1; });
    cell.tabIndex = 0;
    remembered = cell.dataset.cell;
    if (focus) {
      cell.focus({ preventScroll: true });
      cell.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  };

  // The next cell in a direction, skipping the gaps of lanes that lack a case.
  const step = (matrix, from, dRow, dCol) => {
    const rows = Math.max(...cellsOf(matrix).map((c) => Number(c.dataset.row))) + 1;
    const cols = Math.max(...cellsOf(matrix).map((c) => Number(c.dataset.col))) + 1;
    let row = Number(from.dataset.row);
    let col = Number(from.dataset.col);
    for (;;) {
      row += dRow;
      col += dCol;
      if (row < 0 || col < 0 || row >= rows || col >= cols) return null;
      const next = cellAt(matrix, row, col);
      if (next && !next.closest("td").hidden) return next; // a lane hidden with Columns is skipped
    }
  };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const matrix = matrixOf();
    const move = MOVES[event.key];
    if (matrix && move) {
      const current = event.target.closest ? event.target.closest("a.cell") : null;
      if (current && matrix.contains(current)) {
        event.preventDefault();
        const next = step(matrix, current, move[0], move[1]);
        if (next) activate(matrix, next);
        return;
      }
      if (event.key === "j" || event.key === "k") { // from anywhere on the page: into the matrix
        const start = (remembered && matrix.querySelector(`a.cell[data-cell="${remembered}"]`))
          || matrix.querySelector('a.cell[tabindex="0"]') || cellsOf(matrix)[0];
        if (start) { event.preventDefault(); activate(matrix, start); }
      }
      return;
    }
    if (event.key.length === 1 && !event.shiftKey) {
      const link = document.querySelector(`a[data-hotkey="${CSS.escape(event.key)}"]`);
      if (link) { event.preventDefault(); link.click(); }
    }
  });

  document.addEventListener("focusin", (event) => {
    const cell = event.target.closest ? event.target.closest("a.cell") : null;
    if (cell && matrixOf()) activate(matrixOf(), cell, false);
  });

  // A live update replaces the matrix rows: put the active cell (and the focus) back.
  document.addEventListener("htmx:beforeSwap", () => {
    const active = document.activeElement;
    hadFocus = !!(active && active.matches && active.matches("a.cell"));
  });
  document.addEventListener("htmx:afterSettle", () => {
    const matrix = matrixOf();
    if (!matrix || !remembered) return;
    const cell = matrix.querySelector(`a.cell[data-cell="${remembered}"]`);
    if (!cell) return;
    const focus = hadFocus && document.activeElement !== cell;
    cellsOf(matrix).forEach((c) => { c.tabIndex = -1; });
    cell.tabIndex = 0;
    if (focus) cell.focus({ preventScroll: true });
    hadFocus = false;
  });

  // -- show/hide lane columns of the results matrix ------------------------------------------
  const hiddenKey = () => {
    const section = document.getElementById("run-results");
    return section ? `agentclash:matrix-hidden:${section.dataset.run}` : null;
  };
  const hiddenCols = () => {
    const key = hiddenKey();
    try { return new Set(key ? JSON.parse(sessionStorage.getItem(key) || "[]") : []); } catch (e) { return new Set(); }
  };
  const applyColumns = () => {
    const matrix = matrixOf();
    const hidden = hiddenCols();
    document.querySelectorAll("input[data-col-toggle]").forEach((box) => { box.checked = !hidden.has(box.dataset.colToggle); });
    if (!matrix) return;
    matrix.querySelectorAll("th[data-col], td[data-col]").forEach((cell) => { cell.hidden = hidden.has(cell.dataset.col); });
  };
  document.addEventListener("change", (event) => {
    const box = event.target.closest ? event.target.closest("input[data-col-toggle]") : null;
    if (!box) return;
    event.stopPropagation(); // not a filter: the form must not reload the results
    const hidden = hiddenCols();
    if (box.checked) hidden.delete(box.dataset.colToggle); else hidden.add(box.dataset.colToggle);
    const key = hiddenKey();
    if (key) sessionStorage.setItem(key, JSON.stringify(Array.from(hidden)));
    applyColumns();
  }, true);
  document.addEventListener("htmx:afterSettle", applyColumns);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", applyColumns); else applyColumns();

  // -- the newest filter wins ------------------------------------------------------------------
  // The filter form targets #run-results-body and is never replaced, so a change made while an
  // answer is on its way stays in the form and is sent next (htmx queues it on the form). A live
  // tick sent before the filter changed still carries the old filter's results: its out-of-band
  // copy of #run-results-body is dropped when its state (query and page) is not the one shown.
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const target = event.detail.target;
    const fragment = event.detail.fragment;
    if (!target || target.id !== "run-results-body" || !fragment) return;
    const incoming = fragment.id === "run-results-body" ? fragment : fragment.querySelector("#run-results-body");
    if (incoming && incoming.dataset.state !== target.dataset.state) event.detail.shouldSwap = false;
  });

  // -- copy a new share link ----------------------------------------------------------------
  document.addEventListener("click", (event) => {
    const button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (!button) return;
    const field = document.querySelector(button.dataset.copy);
    if (!field) return;
    field.select();
    const done = () => { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(field.value).then(done, () => { document.execCommand("copy"); done(); });
    else { document.execCommand("copy"); done(); }
  });
})();
