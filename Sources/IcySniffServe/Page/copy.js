// Copying a request as DevTools' "Copy" menu does: as cURL, as fetch, its URL, its headers, its
// response body, its HAR entry (the detail pane's bar and the rows' context menu).

import { api, el, showNotice } from "./util.js";

// ---- Copy as cURL, as fetch, as HAR JSON (DevTools' "Copy" menu) ------------------------------
//
// Made from the HAR entry the server gave: its values are redacted as in the files (a cookie or a
// token reads "[redacted N bytes]" unless the run kept secrets), so a copied command never holds
// what the run was told to hide. HTTP/2 and HTTP/3 pseudo-headers and the framing headers
// (Content-Length, Transfer-Encoding, Connection, Host, which curl and fetch write themselves)
// are left out, as DevTools leaves them out.

const NOT_COPIED = new Set(["content-length", "transfer-encoding", "connection", "host", "keep-alive", "upgrade", "te", "trailer", "proxy-connection"]);

function copiedHeaders(req) {
  return (req.headers || []).filter(h => !h.name.startsWith(":") && !NOT_COPIED.has(h.name.toLowerCase()));
}

/** A POSIX shell word: single-quoted, a single quote written as '\''. */
function shellQuote(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }

export function curlOf(e) {
  const req = e.request || {};
  const parts = ["curl " + shellQuote(req.url || "")];
  const method = req.method || "GET";
  const body = req.postData && req.postData.text !== undefined ? req.postData.text : null;
  if (method !== "GET" || body !== null) parts.push("-X " + shellQuote(method));
  let compressed = false;
  for (const h of copiedHeaders(req)) {
    if (h.name.toLowerCase() === "accept-encoding") { compressed = true; }
    parts.push("-H " + shellQuote(`${h.name}: ${h.value}`));
  }
  if (body !== null) parts.push("--data-raw " + shellQuote(body));
  if (compressed) parts.push("--compressed");
  return parts.join(" \\\n  ");
}

export function fetchOf(e) {
  const req = e.request || {};
  const headers = {};
  for (const h of copiedHeaders(req)) headers[h.name] = h.name in headers ? headers[h.name] + ", " + h.value : h.value;
  const init = { method: req.method || "GET", headers };
  if (req.postData && req.postData.text !== undefined) init.body = req.postData.text;
  return `fetch(${JSON.stringify(req.url || "")}, ${JSON.stringify(init, null, 2)});`;
}

export function copyText(text, what) {
  const done = () => showNotice(`Copied ${what}.`);
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(done, () => showNotice(`The browser did not allow copying ${what}.`));
  } else {
    showNotice(`The browser did not allow copying ${what}.`);
  }
}

/** A header section as DevTools copies it: the start line, then a line per field. */
export function headersText(e, side) {
  const m = e[side] || {};
  const start = side === "request" ? `${m.method || ""} ${m.url || ""} ${m.httpVersion || ""}` : `${m.httpVersion || ""} ${m.status || ""} ${m.statusText || ""}`;
  return [start.trim(), ...(m.headers || []).map(h => `${h.name}: ${h.value}`)].join("\n");
}

/** A response body as text (UTF-8): from the HAR opened in the page, or the server's copy. */
export function responseBodyText(row, e) {
  const content = (e.response || {}).content || {};
  if (content.text !== undefined) {
    return content.encoding === "base64" ? new TextDecoder().decode(Uint8Array.from(atob(content.text), c => c.charCodeAt(0))) : content.text;
  }
  return fetch(api(`/api/bodies/${row.seq}/response`)).then(r => r.ok ? r.arrayBuffer() : Promise.reject(new Error(`HTTP ${r.status}`)))
    .then(b => new TextDecoder().decode(b));
}

export function copyBar(e) {
  const button = (label, what, make) => el("button", { type: "button", text: label, "aria-label": `${label} (${what})`, onclick: () => copyText(make(), what) });
  return el("div", { class: "copy-bar", role: "toolbar", "aria-label": "Copy this request" },
    button("Copy as cURL", "the request as a curl command", () => curlOf(e)),
    button("Copy as fetch", "the request as a fetch call", () => fetchOf(e)),
    button("Copy URL", "the URL", () => (e.request || {}).url || ""),
    button("Copy as HAR", "the HAR entry", () => JSON.stringify(e, null, 2)));
}
