// Helpers every part of the page uses: the API's addresses, elements made from text (never
// markup), and how sizes, durations and times are written.

export const ROW_HEIGHT = 22;
const token = new URLSearchParams(location.search).get("token");

// ---- Small helpers ---------------------------------------------------------------------------

export function api(path) {
  if (!token) return path;
  return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);
}

export function $(id) { return document.getElementById(id); }

/** Text as the page shows it: the characters that reorder or hide text (bidirectional overrides
 *  and isolates, directional marks, zero-width and other invisible format characters) written out
 *  as ⟨U+202E⟩, so that a header such as `Host: \u202Eelpmaxe` reads as sent, not reversed. */
const INVISIBLE = /[\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2069\u206A-\u206F\u3164\uFEFF\uFFA0]/g;
export function shown(text) {
  return String(text).replace(INVISIBLE, c => "\u27E8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27E9");
}

/** An element with attributes (never markup) and children (strings become text nodes). */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = shown(v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : k === "title" ? shown(v) : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : shown(c));
  return e;
}

export function fmtBytes(n) {
  if (n === null || n === undefined || n < 0) return "";
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
  return (n / 1048576).toFixed(1) + " MB";
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
  return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
}

export function fmtClock(ms) {
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}.${p(d.getUTCMilliseconds(), 3)}`;
}

export function parseTime(text) {
  // "2011-03-18T19:06:08.652003Z": Date keeps milliseconds; the microseconds are added back.
  const ms = Date.parse(text);
  const m = /\.(\d+)Z$/.exec(text || "");
  return m && m[1].length > 3 ? ms + Number("0." + m[1].slice(3)) : ms;
}

export function typeOf(mime, url, status) {
  mime = (mime || "").toLowerCase();
  if (status === 101) return "websocket";
  if (mime.includes("html")) return "document";
  if (mime.includes("javascript") || mime.includes("ecmascript")) return "script";
  if (mime.includes("css")) return "stylesheet";
  if (mime.startsWith("image/")) return "image";
  if (mime.startsWith("font/") || mime.includes("woff") || mime.includes("opentype") || mime.includes("truetype")) return "font";
  if (mime.includes("json")) return "json";
  if (mime.includes("xml")) return "xml";
  if (mime.startsWith("audio/") || mime.startsWith("video/")) return "media";
  if (!mime && url) {
    const path = url.split("?")[0].toLowerCase();
    if (/\.(js|mjs)$/.test(path)) return "script";
    if (/\.css$/.test(path)) return "stylesheet";
    if (/\.(png|jpe?g|gif|webp|svg|ico|avif)$/.test(path)) return "image";
    if (/\.(woff2?|ttf|otf)$/.test(path)) return "font";
  }
  return "other";
}

/** One copy of a string that many rows share (a server, a host, a MIME type): the first seen.
 *  At most 50,000 are kept; past that a string is its own copy. Not a string: itself. */
const interned = new Map();
export function intern(text) {
  if (typeof text !== "string") return text;
  const known = interned.get(text);
  if (known !== undefined) return known;
  if (interned.size < 50000) interned.set(text, text);
  return text;
}

export function hostOf(url) {
  try { return new URL(url).host; } catch (_) { return ""; }
}

/** "address:port", or what of it is known ("" when neither: a browser's HAR names no client). */
export function endpoint(address, port) {
  if (!address) return "";
  return port ? `${address.includes(":") ? "[" + address + "]" : address}:${port}` : address;
}

export function showNotice(text) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = !text;
}
