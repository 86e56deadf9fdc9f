// Small progressive enhancements. Every feature works without this file.
// No inline script or handler anywhere (strict Content-Security-Policy): behaviour is wired here
// through data- attributes.

// Copy a field's value (or an element's text) to the clipboard; say so on the button.
const copyText = async (text) => {
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch (_) { /* fall back below */ }
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "visually-hidden";
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
  area.remove();
  return ok;
};

const setNavOpen = (open) => {
  const sidebar = document.getElementById("sidebar");
  const toggle = document.getElementById("nav-toggle");
  if (!sidebar || !toggle) return;
  sidebar.classList.toggle("is-open", open);
  toggle.setAttribute("aria-expanded", open ? "true" : "false");
  toggle.textContent = open ? "Close" : "Menu";
};

document.addEventListener("click", (event) => {
  const opener = event.target.closest("[data-open-dialog]");
  if (opener) {
    const dialog = document.getElementById(opener.dataset.openDialog);
    if (dialog) { event.preventDefault(); dialog.showModal(); }
  }
  const closer = event.target.closest("[data-close-dialog]");
  if (closer && closer.closest("dialog")) { event.preventDefault(); closer.closest("dialog").close(); }
  const copy = event.target.closest("[data-copy-target]");
  if (copy) {
    const el = document.getElementById(copy.dataset.copyTarget);
    if (el) {
      const label = copy.dataset.label || copy.textContent;
      copy.dataset.label = label;
      if (el.select) el.select();
      copyText(el.value ?? el.textContent).then((ok) => {
        copy.textContent = ok ? "Copied" : "Press Ctrl+C to copy";
        window.setTimeout(() => { copy.textContent = label; }, 2500);
      });
    }
  }
  const toggle = event.target.closest("[data-nav-toggle]");
  if (toggle) {
    event.preventDefault();
    setNavOpen(toggle.getAttribute("aria-expanded") !== "true");
  }
  const dismiss = event.target.closest("[data-dismiss]");
  if (dismiss) { dismiss.closest(".message")?.remove(); }
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && document.getElementById("sidebar")?.classList.contains("is-open")) {
    setNavOpen(false);
    document.getElementById("nav-toggle")?.focus();
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

// A failed htmx request would otherwise change nothing on the page: say what happened, using
// the error page's own sentence ([data-error-message]) or the API envelope's message.
const STATUS_TEXT = {
  0: "Could not reach the server. Check your connection and try again.",
  400: "The server could not use what was sent. Correct it and try again.",
  403: "Your role in this workspace does not allow this.",
  404: "That was not found. It may have been deleted; reload the page.",
  413: "That was too much data for one request.",
  429: "Too many requests. Wait a moment and try again.",
};

const requestErrorText = (xhr) => {
  const status = xhr ? xhr.status : 0;
  const body = xhr && typeof xhr.responseText === "string" ? xhr.responseText : "";
  if (body) {
    try {
      const data = JSON.parse(body);
      if (data && data.error && data.error.message) return data.error.message;
    } catch (_) {
      const doc = new DOMParser().parseFromString(body, "text/html");
      const found = doc.querySelector("[data-error-message]");
      if (found && found.textContent.trim()) return found.textContent.trim().replace(/\s+/g, " ");
    }
  }
  if (STATUS_TEXT[status]) return STATUS_TEXT[status];
  return status >= 500 ? "Something went wrong on our side. The error has been logged; try again in a moment." : `The request failed (HTTP ${status}).`;
};

const showRequestError = (text) => {
  const slot = document.getElementById("request-errors");
  if (!slot) return;
  const box = document.createElement("div");
  box.className = "message message-error";
  box.setAttribute("role", "alert");
  const span = document.createElement("span");
  span.textContent = text;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "linklike";
  button.dataset.dismiss = "";
  button.textContent = "Dismiss";
  box.append(span, " ", button);
  slot.replaceChildren(box);
};

document.addEventListener("htmx:responseError", (event) => showRequestError(requestErrorText(event.detail.xhr)));
document.addEventListener("htmx:sendError", () => showRequestError(STATUS_TEXT[0]));
window.agentclash = { showRequestError };

// Dialogs that arrive with data-autoopen (an edit dialog fetched with hx-get, or a page
// re-rendered with form errors) open themselves.
document.addEventListener("DOMContentLoaded", () => {
  const open = (root) => {
    const found = root.matches && root.matches("dialog[data-autoopen]") ? [root] : [];
    const nested = root.querySelectorAll ? Array.from(root.querySelectorAll("dialog[data-autoopen]")) : [];
    found.concat(nested).forEach((dialog) => { if (!dialog.open) dialog.showModal(); });
  };
  if (window.htmx) { window.htmx.onLoad(open); } else { open(document); }
  if (window.location.hash === "#sidebar") setNavOpen(true);
});
