// Pack YAML editor: line-number gutter (error and warning marks), jump-to-line, file loading, stale-validation guard.
// Progressive enhancement: the form validates and publishes without this file.
(function () {
  "use strict";

  function editorParts() {
    const textarea = document.querySelector("[data-yaml]");
    const gutter = document.querySelector("[data-gutter]");
    return { textarea, gutter };
  }

  // Lines listed in #editor-result's data-error-lines / data-warning-lines.
  function resultLines(name) {
    const result = document.getElementById("editor-result");
    const raw = result ? result.dataset[name] || "" : "";
    return new Set(raw.split(",").filter(Boolean).map(Number));
  }

  function renderGutter() {
    const { textarea, gutter } = editorParts();
    if (!textarea || !gutter) return;
    const count = textarea.value.split("\n").length;
    const marked = resultLines("errorLines");
    const warned = resultLines("warningLines");
    const fragment = document.createDocumentFragment();
    for (let n = 1; n <= count; n += 1) {
      const span = document.createElement("span");
      span.textContent = String(n);
      if (marked.has(n)) span.className = "gutter-error";
      else if (warned.has(n)) span.className = "gutter-warning";
      fragment.appendChild(span);
    }
    gutter.replaceChildren(fragment);
    gutter.scrollTop = textarea.scrollTop;
  }

  function lineHeight(textarea) {
    const value = parseFloat(getComputedStyle(textarea).lineHeight);
    return Number.isFinite(value) ? value : 19.5;
  }

  // Select line `line` (1-based) in the textarea and scroll it into the middle of the view.
  function selectLine(line) {
    const { textarea } = editorParts();
    if (!textarea) return;
    const lines = textarea.value.split("\n");
    const index = Math.min(Math.max(line, 1), lines.length) - 1;
    let start = 0;
    for (let i = 0; i < index; i += 1) start += lines[i].length + 1;
    const end = start + lines[index].length;
    textarea.focus();
    textarea.setSelectionRange(start, end);
    const target = index * lineHeight(textarea) - textarea.clientHeight / 2;
    textarea.scrollTop = Math.max(0, target);
    textarea.scrollLeft = 0;
    textarea.dataset.selectedLine = String(index + 1);
    const { gutter } = editorParts();
    if (gutter) {
      gutter.querySelectorAll(".gutter-current").forEach((el) => el.classList.remove("gutter-current"));
      const span = gutter.children[index];
      if (span) span.classList.add("gutter-current");
      gutter.scrollTop = textarea.scrollTop;
    }
  }

  function markStale() {
    const publish = document.querySelector("[data-publish]");
    if (publish && !publish.disabled) {
      publish.disabled = true;
      publish.title = "Validate again first";
      const note = document.querySelector("[data-stale-note]");
      if (note) note.hidden = false;
    }
  }

  document.addEventListener("input", (event) => {
    if (event.target.matches("[data-yaml]")) {
      renderGutter();
      markStale();
    }
  });

  document.addEventListener(
    "scroll",
    (event) => {
      if (event.target.matches && event.target.matches("[data-yaml]")) {
        const { gutter } = editorParts();
        if (gutter) gutter.scrollTop = event.target.scrollTop;
      }
    },
    true,
  );

  document.addEventListener("click", (event) => {
    const link = event.target.closest("[data-line]");
    if (!link) return;
    event.preventDefault();
    selectLine(Number(link.dataset.line));
  });

  // A chosen file is loaded into the editor so it can be validated, fixed and published as text.
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (!input.matches("[data-yaml-file]") || !input.files || !input.files.length) return;
    const file = input.files[0];
    if (file.size > 1024 * 1024) return; // the server explains the limit
    const reader = new FileReader();
    reader.onload = () => {
      const { textarea } = editorParts();
      if (!textarea) return;
      textarea.value = String(reader.result).replace(/^\uFEFF/, "");
      input.value = "";
      renderGutter();
      markStale();
    };
    reader.readAsText(file);
  });

  // A paste over the bundle limit never reaches the form: the server's request size limit refuses
  // the whole request first, and htmx swaps nothing for an error. Say what the form would say.
  function pasteTooLarge() {
    const { textarea } = editorParts();
    if (!textarea || !textarea.dataset.maxBytes) return false;
    return new TextEncoder().encode(textarea.value).length > Number(textarea.dataset.maxBytes);
  }

  function showTooLarge() {
    const { textarea } = editorParts();
    const result = document.getElementById("editor-result");
    if (!textarea || !result) return;
    result.querySelectorAll(".editor-errors, .ok-note, .editor-warnings").forEach((el) => el.remove());
    const box = document.createElement("div");
    box.className = "editor-errors";
    const heading = document.createElement("h2");
    heading.textContent = "1 problem";
    const list = document.createElement("ul");
    list.className = "errors-list";
    const item = document.createElement("li");
    // In bytes: "at most 1 MiB. This one is 1.0 MiB" read as no problem at all (issue 25).
    const bytes = new TextEncoder().encode(textarea.value).length;
    const over = bytes - 1024 * 1024;
    item.textContent = `${textarea.dataset.tooLarge} This one is ${bytes.toLocaleString("en")} bytes, ${over.toLocaleString("en")} too many.`;
    list.appendChild(item);
    box.append(heading, list);
    result.prepend(box);
    result.dataset.errorLines = "";
    result.dataset.warningLines = "";
    const publish = document.querySelector("[data-publish]");
    if (publish) { publish.disabled = true; publish.title = "Validate first"; }
    renderGutter();
    result.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("htmx:confirm", (event) => {
    if (event.target.closest && event.target.closest("#pack-editor") && pasteTooLarge()) {
      event.preventDefault();
      showTooLarge();
    }
  });
  document.addEventListener("submit", (event) => {
    if (event.target.id === "pack-editor" && pasteTooLarge()) {
      event.preventDefault();
      showTooLarge();
    }
  });

  // After Validate, redraw the gutter's error marks and bring the result into view.
  document.addEventListener("htmx:afterSettle", () => {
    const result = document.getElementById("editor-result");
    if (!result) return;
    renderGutter();
    result.scrollIntoView({ block: "nearest" });
  });

  document.addEventListener("DOMContentLoaded", renderGutter);
  if (document.readyState !== "loading") renderGutter();
  window.packsEditor = { selectLine, renderGutter };
})();
