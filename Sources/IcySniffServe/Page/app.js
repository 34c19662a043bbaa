// icy-sniff's web view (--serve). Plain JavaScript, no dependencies, nothing from the network
// but this page's own server (docs/WEBVIEW.md describes its API).
//
// Everything the page shows comes from captured traffic and may have been shaped by an attacker:
// it is put into the page as text (textContent, DOM nodes), never as markup.
"use strict";

const ROW_HEIGHT = 22;
const token = new URLSearchParams(location.search).get("token");

const state = {
  rows: [],            // transactions and connection rows, in the order they came
  bySeq: new Map(),    // seq -> row
  connections: new Map(), // connection id ("C5") -> its row (latest record)
  connectionsWithTransactions: new Set(), // a decrypted connection shows as its transactions
  pages: new Map(),    // page id -> {id, title, started, client}
  shown: [],           // the rows the filter lets through, in the list's order
  listed: [],          // what the list draws: `shown`, or grouped by domain with a line per group
  groupBy: false,      // "Group by domain"
  groups: new Map(),   // domain -> its group line (kind "g"), kept so that folding survives refilters
  fresh: [],           // rows come since the filter last ran: added to shown as they match
  refilter: true,      // the filter, the sort or a shown row changed: run it over every row
  transactions: 0,     // transactions received, and those shown
  shownTransactions: 0,
  selected: null,
  after: 0,            // the last seq received
  running: true,
  live: false,
  bodies: false,
  offline: null,       // a HAR opened in the page: {name, entries}
  searchSeqs: null,    // Set of seqs whose headers match the search (from the server), or null
  headerSeqs: new Map(), // "has-response-header:name" -> Set of seqs that have it (from the server)
  sort: { key: null, dir: 1 },
  skipped: 0,
  view: "list",
  wfScale: null,       // px per ms, null: fit
  wfScaleDrawn: null,  // the scale of the waterfall on screen
};

// ---- Small helpers ---------------------------------------------------------------------------

function api(path) {
  if (!token) return path;
  return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token);
}

function $(id) { return document.getElementById(id); }

/** Text as the page shows it: the characters that reorder or hide text (bidirectional overrides
 *  and isolates, directional marks, zero-width and other invisible format characters) written out
 *  as ⟨U+202E⟩, so that a header such as `Host: \u202Eelpmaxe` reads as sent, not reversed. */
const INVISIBLE = /[\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2069\u206A-\u206F\u3164\uFEFF\uFFA0]/g;
function shown(text) {
  return String(text).replace(INVISIBLE, c => "\u27E8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27E9");
}

/** An element with attributes (never markup) and children (strings become text nodes). */
function el(tag, attrs, ...children) {
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

function fmtBytes(n) {
  if (n === null || n === undefined || n < 0) return "";
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
  return (n / 1048576).toFixed(1) + " MB";
}

function fmtMs(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + " ms";
  return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
}

function fmtClock(ms) {
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}.${p(d.getUTCMilliseconds(), 3)}`;
}

function parseTime(text) {
  // "2011-03-18T19:06:08.652003Z": Date keeps milliseconds; the microseconds are added back.
  const ms = Date.parse(text);
  const m = /\.(\d+)Z$/.exec(text || "");
  return m && m[1].length > 3 ? ms + Number("0." + m[1].slice(3)) : ms;
}

function typeOf(mime, url, status) {
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

function hostOf(url) {
  try { return new URL(url).host; } catch (_) { return ""; }
}

// ---- Records -> rows -------------------------------------------------------------------------

/** A transaction's NDJSON row (docs/OUTPUT.md, NDJSON) as the page keeps it: the fields it shows and filters on. */
function rowFromRecord(rec) {
  const d = rec.data;
  const ts = parseTime(d.ts);
  return {
    seq: rec.seq, kind: "t", ts, client: d.client_ip, clientPort: d.client_port, device: d.device || "", server: d.server_ip + ":" + d.server_port,
    method: d.method || "", url: d.url || (d.host ? d.host + (d.target || "") : ""), host: d.host || "",
    status: d.status === null ? 0 : d.status, reason: d.reason || "", protocol: d.protocol || "",
    mime: d.content_type || "", type: typeOf(d.content_type, d.url, d.status),
    size: d.response_body_len, time: d.time_ms,
    phases: { dns: d.dns_ms, connect: d.connect_ms, ssl: d.ssl_ms, send: d.send_ms, wait: d.wait_ms, receive: d.receive_ms },
    cache: d.cache || "", avoidable: !!d.cache_avoidable, flags: d.flags || [], conn: d.connection, page: rec.page,
    bodies: rec.bodies || [-1, -1], sni: d.sni, tls: d.tls_version,
  };
}

/** A connection record (HAR's _connections item) as a row of its own. */
function connectionRow(rec) {
  const d = rec.data;
  const tls = d.tls || {}, quic = d.quic || null;
  return {
    seq: rec.seq, kind: "c", id: d.id, ts: parseTime(d.start), client: (d.client || "").replace(/:\d+$/, "").replace(/^\[|\]$/g, ""), device: d.device || "",
    server: d.server, transport: d.transport, sni: tls.sni || (quic && quic.sni) || "", version: quic ? quic.version : (tls.version || ""),
    alpn: tls.alpn || (tls.alpnOffered || []).join(","), decrypted: !!(tls.decrypted || (quic && quic.decrypted)),
    encrypted: !!(d.tls || d.quic), bytes: (d.bytesFromClient || 0) + (d.bytesFromServer || 0),
    // `duration` is in ms, as in --connections and the HAR's _connections.
    time: d.duration || 0, open: !!rec.open, flags: d.anomalies || [], data: d, inferred: d.inferred || null,
    protocol: quic ? "quic" : (d.tls ? "tls" : d.transport), method: "", status: -1, type: "other", host: tls.sni || "",
    url: "", cache: "", avoidable: false,
  };
}

/** A connection's exchanges estimated from its records (docs/OUTPUT.md, "Encrypted exchanges"),
 *  each a row of its own (kind "e"): no method, status or path — sizes and times only, the
 *  response's only when the exchange had the connection to itself. */
function estimateRows(conn, rec) {
  const inferred = rec.data.inferred || {};
  const list = inferred.estimates || [];
  const word = inferred.protocol === "http/1.1" ? "exchange" : "request";
  return list.map((x, i) => ({
    seq: rec.seq + (i + 1) / (list.length + 1), kind: "e", index: i + 1, of: list.length, word, exact: !!inferred.exchanges_exact,
    ts: parseTime(x.ts), client: conn.client, device: conn.device, server: conn.server, sni: conn.sni, host: conn.sni, conn: conn.id,
    method: "", url: inferred.url, status: -1, protocol: inferred.protocol || "", type: "other", mime: "",
    size: x.response_bytes, requestBytes: x.request_bytes, time: x.time_ms, alone: !!x.alone, estimate: x,
    phases: { dns: null, connect: null, ssl: null, send: x.send_ms, wait: x.wait_ms, receive: x.receive_ms },
    cache: "", avoidable: false, flags: ["inferred"], encrypted: true,
  }));
}

/** Puts a connection's estimated exchanges in the list, in place of those of its earlier record. */
function replaceEstimates(conn, rec) {
  const made = estimateRows(conn, rec);
  if (conn.estimates && conn.estimates.length) {
    const gone = new Set(conn.estimates);
    state.rows = state.rows.filter(r => !gone.has(r));
    for (const r of gone) state.bySeq.delete(r.seq);
    state.refilter = true;
  }
  conn.estimates = made;
  for (const r of made) { state.rows.push(r); state.fresh.push(r); state.bySeq.set(r.seq, r); }
  return made.length > 0 && noteChoice(made[0]);
}

function ingest(records) {
  let changedFilters = false;
  for (const rec of records) {
    if (rec.seq > state.after) state.after = rec.seq;
    if (rec.kind === "page") {
      const d = rec.data;
      state.pages.set(d.id, { id: d.id, title: d.title, started: parseTime(d.startedDateTime), client: d._client });
    } else if (rec.kind === "transaction") {
      const row = rowFromRecord(rec);
      state.rows.push(row);
      state.fresh.push(row);
      state.transactions++;
      state.bySeq.set(row.seq, row);
      // Its connection's own row gives way to its transactions.
      if (!state.connectionsWithTransactions.has(row.conn) && state.connections.has(row.conn)) state.refilter = true;
      state.connectionsWithTransactions.add(row.conn);
      changedFilters = noteChoice(row) || changedFilters;
    } else if (rec.kind === "connection") {
      const row = connectionRow(rec);
      const old = state.connections.get(row.id);
      if (old) {
        // The same connection, later (opened -> finished): the row is updated where it is; the
        // filter runs again only if that shows or hides it.
        const f = readFilters(), before = matches(old, f);
        Object.assign(old, row, { seq: old.seq });
        state.bySeq.set(rec.seq, old);
        if (matches(old, f) !== before) state.refilter = true;
        changedFilters = replaceEstimates(old, rec) || changedFilters;
      } else {
        state.connections.set(row.id, row);
        state.rows.push(row);
        state.fresh.push(row);
        state.bySeq.set(row.seq, row);
        if (row.encrypted) changedFilters = noteChoice(row) || changedFilters;
        changedFilters = replaceEstimates(row, rec) || changedFilters;
      }
    }
  }
  if (changedFilters) fillChoices();
  scheduleRender();
}

// ---- Device names (/api/devices: the names devices gave themselves, as the run learns them) ---

const deviceNames = new Map();   // link-layer address -> its names, its own name first
let devicesAfter = 0;            // the last change of the server's device names the page has
let devicesAsking = null;        // the request under way, if any
let devicesAskedAt = 0, devicesLater = null; // at most one request a second: the rest wait

/** A device as people know it: "Pixel-7 (02:00:00:00:00:11)"; its address alone when unnamed. */
function deviceLabel(mac) {
  const names = deviceNames.get(mac);
  return names && names.length ? `${names[0]} (${mac})` : mac;
}

/** The name a row's client goes by: its device's first name, else its address. */
function clientText(row) {
  const names = row.device ? deviceNames.get(row.device) : null;
  return names && names.length ? names[0] : row.client;
}

/** Asks the server what devices were named since the last answer (one request at a time; a
 *  run that names a phone while the page is open shows it at the next records). */
function refreshDevices() {
  if (devicesAsking || devicesLater || state.offline) return;
  const wait = devicesAskedAt + 1000 - Date.now();
  if (wait > 0) { devicesLater = setTimeout(() => { devicesLater = null; refreshDevices(); }, wait); return; }
  devicesAskedAt = Date.now();
  devicesAsking = fetch(api(`/api/devices?after=${devicesAfter}`)).then(r => r.ok ? r.json() : null).then(j => {
    devicesAsking = null;
    if (!j || state.offline) return;
    devicesAfter = j.last;
    if (!j.devices.length) return;
    for (const d of j.devices) deviceNames.set(d.mac, d.names);
    fillChoices();
    drawRows();
  }).catch(() => { devicesAsking = null; });
}

// ---- Filter choices (devices, protocols, methods, cache verdicts, flags seen) -----------------

const choices = { client: new Set(), protocol: new Set(), method: new Set(), cache: new Set(), flags: new Set() };

function noteChoice(row) {
  let changed = false;
  const add = (set, v) => { if (v && !set.has(v)) { set.add(v); changed = true; } };
  // A device: its link-layer address where the capture names one (its IPv4 and IPv6 rows alike).
  add(choices.client, row.device || row.client);
  add(choices.protocol, row.protocol);
  add(choices.method, row.method);
  if (row.cache) add(choices.cache, row.cache.split(" ")[0]);
  for (const f of row.flags) add(choices.flags, f);
  return changed;
}

function fillSelect(select, values, keepFirst, label = v => v) {
  const current = select.value;
  while (select.options.length > keepFirst) select.remove(keepFirst);
  const sorted = [...values].map(v => [label(v), v]).sort((a, b) => a[0].localeCompare(b[0]));
  for (const [text, v] of sorted) select.append(el("option", { value: v, text }));
  select.value = current;
  if (select.value !== current) { // a value from the URL not seen yet: kept as a choice
    select.append(el("option", { value: current, text: current }));
    select.value = current;
  }
}

function fillChoices() {
  fillSelect($("f-client"), choices.client, 1, deviceLabel);
  fillSelect($("f-protocol"), choices.protocol, 1);
  fillSelect($("f-method"), choices.method, 1);
  fillSelect($("f-cache"), choices.cache, 2);
  fillSelect($("f-flags"), choices.flags, 3);
}

// ---- Filters (kept in the page's address: #q=…&status=4) ---------------------------------------

const filterFields = ["q", "client", "host", "status", "type", "protocol", "method", "cache", "flags"];

function readFilters() {
  const f = {};
  for (const k of filterFields) f[k] = $("f-" + k).value.trim();
  f.encrypted = $("f-encrypted").checked;
  f.query = parseQuery(f.q);
  return f;
}

function filtersToHash() {
  const f = readFilters();
  const p = new URLSearchParams();
  for (const k of filterFields) if (f[k]) p.set(k, f[k]);
  if (!f.encrypted) p.set("encrypted", "0");
  if (state.view !== "list") p.set("view", state.view);
  if (state.groupBy) p.set("group", "domain");
  const hash = p.toString();
  history.replaceState(null, "", location.pathname + location.search + (hash ? "#" + hash : ""));
}

function filtersFromHash() {
  state.refilter = true;
  const p = new URLSearchParams(location.hash.slice(1));
  for (const k of filterFields) {
    const v = p.get(k) || "";
    const input = $("f-" + k);
    if (input.tagName === "SELECT" && v && ![...input.options].some(o => o.value === v)) input.append(el("option", { value: v, text: v }));
    input.value = v;
  }
  $("f-encrypted").checked = p.get("encrypted") !== "0";
  state.view = p.get("view") === "waterfall" ? "waterfall" : "list";
  state.groupBy = p.get("group") === "domain";
  $("f-group").checked = state.groupBy;
}

// ---- The search box's filter syntax (DevTools' network panel) --------------------------------

/** The keys the search box reads as filters (docs/WEBVIEW.md); any other word is free text. */
const QUERY_KEYS = ["status-code", "domain", "method", "mime-type", "resource-type", "larger-than", "has-response-header",
  "has-request-header", "is", "protocol", "device", "scheme", "url"];
const IS_VALUES = ["avoidable", "encrypted", "inferred", "flagged", "decrypted"];
/** The keys only a transaction has: an encrypted connection's row or an estimate matches none. */
const TRANSACTION_KEYS = new Set(["status-code", "method", "mime-type", "has-response-header", "has-request-header"]);

/** The search box as terms: `key:value` filters (a leading `-` negates), `/regex/` over the URL,
 *  and free text (the words left, one phrase, searched as before). */
function parseQuery(text) {
  const terms = [], words = [];
  for (let word of text.split(/\s+/).filter(Boolean)) {
    let negate = false;
    if (word.length > 1 && word[0] === "-") { negate = true; word = word.slice(1); }
    const m = /^([a-z-]+):(.+)$/.exec(word);
    if (word.length > 2 && word[0] === "/" && word.endsWith("/")) {
      let re = null;
      try { re = new RegExp(word.slice(1, -1), "i"); } catch (_) { /* not a regex: free text */ }
      if (re) { terms.push({ key: "regex", re, negate }); continue; }
    }
    if (m && QUERY_KEYS.includes(m[1])) {
      const term = { key: m[1], value: m[2], negate };
      if (m[1] === "domain" || m[1] === "device") term.re = globRegex(m[2]);
      if (m[1] === "larger-than") term.bytes = sizeValue(m[2]);
      terms.push(term);
    } else if (negate) {
      terms.push({ key: "text", value: word.toLowerCase(), negate });
    } else {
      words.push(word);
    }
  }
  return { terms, text: words.join(" ") };
}

/** A shell glob (`*.example.com`) as an anchored regular expression, case ignored. */
function globRegex(glob) {
  return new RegExp("^" + glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$", "i");
}

/** "10k" = 10,000 bytes, "2M" = 2,000,000, as DevTools reads larger-than:. NaN when not a size. */
function sizeValue(text) {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text);
  if (!m) return NaN;
  return parseFloat(m[1]) * (m[2] === "" ? 1 : m[2].toLowerCase() === "k" ? 1e3 : 1e6);
}

/** Whether a row satisfies one term (before its negation). */
function termHolds(row, t) {
  const transaction = row.kind === "t";
  if (TRANSACTION_KEYS.has(t.key) && !transaction) return false;
  switch (t.key) {
    case "status-code": return String(row.status) === t.value;
    case "domain": return t.re.test(row.host || "") || t.re.test(row.sni || "");
    case "method": return row.method.toUpperCase() === t.value.toUpperCase();
    case "mime-type": return (row.mime || "").split(";")[0].trim().toLowerCase() === t.value.toLowerCase();
    case "resource-type": return row.type === t.value.toLowerCase();
    case "larger-than": return (row.kind === "c" ? row.bytes : row.size) > t.bytes;
    case "has-response-header": case "has-request-header": {
      const seqs = state.headerSeqs.get(t.key + ":" + t.value.toLowerCase());
      return !!seqs && seqs.has(row.seq);
    }
    case "is":
      switch (t.value) {
        case "avoidable": return !!row.avoidable;
        case "encrypted": return row.kind !== "t";
        case "inferred": return row.kind === "e";
        case "flagged": return row.flags.length > 0;
        case "decrypted": return transaction && !!row.tls;
        default: return false;
      }
    case "protocol": return (row.protocol || "").toLowerCase() === t.value.toLowerCase();
    case "device": {
      if (row.device && (t.re.test(row.device) || (deviceNames.get(row.device) || []).some(n => t.re.test(n)))) return true;
      return t.re.test(row.client || "");
    }
    case "scheme": return (row.url || "").toLowerCase().startsWith(t.value.toLowerCase() + ":");
    case "url": return (row.url || "").toLowerCase().includes(t.value.toLowerCase());
    case "regex": return t.re.test(row.url || "");
    case "text": return (row.url || "").toLowerCase().includes(t.value) || (row.host || "").toLowerCase().includes(t.value);
    default: return true;
  }
}

/** The header filters of the query whose transactions are not known yet: asked of the server
 *  (`/api/search?response-header=NAME`), or read from the entries of a HAR opened in the page. */
function askHeaderTerms(query) {
  for (const t of query.terms) {
    if (t.key !== "has-response-header" && t.key !== "has-request-header") continue;
    const id = t.key + ":" + t.value.toLowerCase();
    if (state.headerSeqs.has(id) && !state.running) continue;   // a finished run's answer stays
    const side = t.key === "has-response-header" ? "response" : "request";
    if (state.offline) {
      const name = t.value.toLowerCase();
      state.headerSeqs.set(id, new Set(state.offline.entries.map((e, i) =>
        ((e[side] || {}).headers || []).some(h => (h.name || "").toLowerCase() === name) ? i + 1 : 0).filter(Boolean)));
      state.refilter = true;
      continue;
    }
    fetch(api(`/api/search?${side}-header=${encodeURIComponent(t.value)}`)).then(r => r.json()).then(j => {
      state.headerSeqs.set(id, new Set(j.seqs));
      state.refilter = true;
      scheduleRender();
    }).catch(() => {});
  }
}

/** While records come, the header filters in use are asked again (at most once a second), so
 *  that new transactions are judged by them too. */
let headerTermsLater = null;
function refreshHeaderTerms() {
  if (headerTermsLater) return;
  const query = parseQuery($("f-q").value.trim());
  if (!query.terms.some(t => t.key === "has-response-header" || t.key === "has-request-header")) return;
  headerTermsLater = setTimeout(() => { headerTermsLater = null; askHeaderTerms(parseQuery($("f-q").value.trim())); }, 1000);
}

/** Completion for the search box: the keys, and for a key the values this run has shown
 *  (status codes, domains, methods, MIME and resource types, protocols, device names), each
 *  offered as the whole text so far with the last word completed. */
function suggestQuery() {
  const input = $("f-q"), list = $("q-suggest");
  const words = input.value.split(/\s+/);
  const last = words.pop() || "";
  const before = words.filter(Boolean).join(" ");
  const neg = last.startsWith("-") ? "-" : "";
  const word = neg ? last.slice(1) : last;
  const colon = word.indexOf(":");
  let options = [];
  if (colon < 0) {
    options = QUERY_KEYS.filter(k => k.startsWith(word.toLowerCase())).map(k => k + ":");
  } else {
    const key = word.slice(0, colon), part = word.slice(colon + 1).toLowerCase();
    const values = new Set();
    if (key === "is") for (const v of IS_VALUES) values.add(v);
    for (const r of state.rows) {
      if (values.size > 200) break;
      if (key === "status-code" && r.kind === "t") values.add(String(r.status));
      else if (key === "domain" && (r.host || r.sni)) values.add(r.host || r.sni);
      else if (key === "method" && r.method && r.kind === "t") values.add(r.method);
      else if (key === "mime-type" && r.mime) values.add(r.mime.split(";")[0].trim());
      else if (key === "resource-type" && r.kind === "t") values.add(r.type);
      else if (key === "protocol" && r.protocol) values.add(r.protocol);
      else if (key === "scheme" && r.url) values.add(r.url.split(":")[0]);
    }
    if (key === "device") for (const [mac, names] of deviceNames) { values.add(names[0] || mac); }
    options = [...values].filter(v => v.toLowerCase().startsWith(part)).sort().slice(0, 50).map(v => key + ":" + v);
  }
  list.replaceChildren(...options.slice(0, 50).map(o => el("option", { value: (before ? before + " " : "") + neg + o })));
}

function matches(row, f) {
  if (row.kind === "c" || row.kind === "e") {
    // An encrypted connection without keys, and the exchanges its records show: rows of their own
    // (a decrypted connection shows as its transactions). They have no status, type, method or cache.
    const id = row.kind === "c" ? row.id : row.conn;
    if (!f.encrypted || !row.encrypted || row.decrypted || state.connectionsWithTransactions.has(id)) return false;
    if (f.status || f.type || f.method || f.cache) return false;
  }
  if (f.client && (row.device || row.client) !== f.client) return false;
  if (f.host && !(row.host || "").toLowerCase().includes(f.host.toLowerCase()) && !(row.sni || "").toLowerCase().includes(f.host.toLowerCase())) return false;
  if (f.status && String(row.status === 0 ? 0 : Math.floor(row.status / 100)) !== f.status) return false;
  if (f.type && row.type !== f.type) return false;
  if (f.protocol && row.protocol !== f.protocol) return false;
  if (f.method && row.method !== f.method) return false;
  if (f.cache === "avoidable" && !row.avoidable) return false;
  if (f.cache && f.cache !== "avoidable" && !(row.cache || "").startsWith(f.cache)) return false;
  if (f.flags === "any" && row.flags.length === 0) return false;
  if (f.flags === "none" && row.flags.length > 0) return false;
  if (f.flags && f.flags !== "any" && f.flags !== "none" && !row.flags.includes(f.flags)) return false;
  if (f.q) {
    const query = f.query || parseQuery(f.q);
    for (const t of query.terms) if (termHolds(row, t) === t.negate) return false;
    if (query.text) {
      const q = query.text.toLowerCase();
      const inText = (row.url || "").toLowerCase().includes(q) || (row.sni || "").toLowerCase().includes(q)
        || (row.host || "").toLowerCase().includes(q);
      if (!inText && !(state.searchSeqs && state.searchSeqs.has(row.seq))) return false;
    }
  }
  return true;
}

let searchTimer = null, searchAsked = "";
function askSearch() {
  const query = parseQuery($("f-q").value.trim());
  askHeaderTerms(query);
  // The server searches the free text; the filters are the page's.
  const q = query.text;
  if (q === searchAsked) return;
  searchAsked = q;
  state.searchSeqs = null;
  state.refilter = true;
  if (!q) return;
  if (state.offline) {
    // A HAR opened in the page: its entries are here to search.
    const needle = q.toLowerCase();
    state.refilter = true;
    state.searchSeqs = new Set(state.offline.entries.map((e, i) => JSON.stringify(e).toLowerCase().includes(needle) ? i + 1 : 0).filter(Boolean));
    scheduleRender();
    return;
  }
  fetch(api("/api/search?q=" + encodeURIComponent(q))).then(r => r.json()).then(j => {
    if (parseQuery($("f-q").value.trim()).text !== q) return;
    state.searchSeqs = new Set(j.seqs);
    state.refilter = true;
    scheduleRender();
  }).catch(() => {});
}

function onFilterChange() {
  state.refilter = true;
  filtersToHash();
  clearTimeout(searchTimer);
  searchTimer = setTimeout(askSearch, 250);
  scheduleRender();
}

// ---- Columns: which the list shows and how wide (kept in this browser across reloads) --------

/** The columns a user may hide (time and URL always stay), with their header names. */
const OPTIONAL_COLUMNS = [["c-client", "Client"], ["c-method", "Method"], ["c-status", "Status"], ["c-proto", "Protocol"],
  ["c-type", "Type"], ["c-size", "Size"], ["c-dur", "Duration"], ["c-cache", "Cache"], ["c-flags", "Flags"]];
const COLUMN_STORE = "icy-sniff.columns";

function loadColumnPrefs() {
  let p = null;
  try { p = JSON.parse(localStorage.getItem(COLUMN_STORE) || "null"); } catch (_) { p = null; }
  const known = new Set(OPTIONAL_COLUMNS.map(c => c[0]).concat(["c-time"]));
  const hidden = Array.isArray(p && p.hidden) ? p.hidden.filter(c => known.has(c)) : [];
  const widths = {};
  for (const [c, w] of Object.entries((p && p.widths) || {})) if (known.has(c) && Number.isFinite(w)) widths[c] = Math.min(600, Math.max(32, w));
  return { hidden, widths };
}
const columnPrefs = loadColumnPrefs();

function saveColumnPrefs() {
  try { localStorage.setItem(COLUMN_STORE, JSON.stringify(columnPrefs)); } catch (_) { /* storage refused: this page only */ }
}

/** The preferences on the page: hidden columns as classes of <main>, widths as its CSS variables. */
function applyColumns() {
  const main = $("main");
  for (const [c] of OPTIONAL_COLUMNS) main.classList.toggle("hide-" + c, columnPrefs.hidden.includes(c));
  for (const [c, w] of Object.entries(columnPrefs.widths)) main.style.setProperty("--w-" + c, w + "px");
}

function buildColumnsMenu() {
  const menu = $("columns-menu");
  menu.replaceChildren(...OPTIONAL_COLUMNS.map(([c, name]) => {
    const box = el("input", { type: "checkbox", id: "col-" + c });
    box.checked = !columnPrefs.hidden.includes(c);
    box.addEventListener("change", () => {
      columnPrefs.hidden = columnPrefs.hidden.filter(h => h !== c);
      if (!box.checked) columnPrefs.hidden.push(c);
      saveColumnPrefs();
      applyColumns();
    });
    return el("label", { class: "check" }, box, document.createTextNode(" " + name));
  }), (() => {
    const reset = el("button", { type: "button", text: "Default columns" });
    reset.addEventListener("click", () => {
      columnPrefs.hidden = [];
      for (const c of Object.keys(columnPrefs.widths)) $("main").style.removeProperty("--w-" + c);
      columnPrefs.widths = {};
      saveColumnPrefs();
      applyColumns();
      buildColumnsMenu();
    });
    return reset;
  })());
}

function showColumnsMenu(open) {
  $("columns-menu").hidden = !open;
  $("columns-button").setAttribute("aria-expanded", String(open));
  if (open) { const first = $("columns-menu").querySelector("input"); if (first) first.focus(); }
}

/** A grip at each resizable header's right edge: dragging it sets the column's width. */
function addColumnGrips() {
  for (const h of document.querySelectorAll("#list-head > span")) {
    const c = [...h.classList].find(k => k.startsWith("c-"));
    if (!c || c === "c-url") continue;
    const grip = el("span", { class: "grip" });
    grip.setAttribute("aria-hidden", "true");
    grip.addEventListener("click", ev => ev.stopPropagation());   // not a sort
    grip.addEventListener("pointerdown", ev => {
      ev.preventDefault();
      ev.stopPropagation();
      grip.setPointerCapture(ev.pointerId);
      const startX = ev.clientX, startWidth = h.getBoundingClientRect().width;
      const move = e => {
        const w = Math.round(Math.min(600, Math.max(32, startWidth + e.clientX - startX)));
        columnPrefs.widths[c] = w;
        $("main").style.setProperty("--w-" + c, w + "px");
      };
      const up = () => {
        grip.removeEventListener("pointermove", move);
        grip.removeEventListener("pointerup", up);
        saveColumnPrefs();
      };
      grip.addEventListener("pointermove", move);
      grip.addEventListener("pointerup", up);
    });
    h.append(grip);
  }
}

// ---- The list (only the visible rows are in the DOM) -----------------------------------------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

function applyFilter() {
  const f = readFilters();
  const { key, dir } = state.sort;
  // Live, most frames only add rows: those that match go to the end (in arrival order, unsorted).
  if (!state.refilter && !key && !state.groupBy) {
    for (const r of state.fresh) if (matches(r, f)) {
      state.shown.push(r);
      if (r.kind === "t") state.shownTransactions++;
    }
    state.fresh = [];
    state.listed = state.shown;
    return;
  }
  state.refilter = false;
  state.fresh = [];
  let shown = state.rows.filter(r => matches(r, f));
  state.shownTransactions = shown.reduce((n, r) => n + (r.kind === "t" ? 1 : 0), 0);
  if (key) {
    const get = key === "flags" ? (r => r.flags.join(",")) : (r => r[key]);
    shown = shown.slice().sort((a, b) => {
      const x = get(a), y = get(b);
      return (x < y ? -1 : x > y ? 1 : a.seq - b.seq) * dir;
    });
  }
  state.shown = shown;
  state.listed = state.groupBy ? grouped(shown) : shown;
}

/** The domain a row belongs to: its host, else its server name (SNI), else its server. */
function domainOf(row) { return (row.host || row.sni || row.server || "").replace(/:\d+$/, "") || "(none)"; }

/** The rows under a line per domain, domains in the order of their first row (as HTTP Toolkit
 *  and Charles's structure view group them); a folded domain shows its line alone. */
function grouped(rows) {
  const byDomain = new Map();
  for (const r of rows) {
    const d = domainOf(r);
    if (!byDomain.has(d)) byDomain.set(d, []);
    byDomain.get(d).push(r);
  }
  const out = [];
  for (const [domain, members] of byDomain) {
    let g = state.groups.get(domain);
    if (!g) {
      g = { kind: "g", seq: -(state.groups.size + 1), domain, folded: false, flags: [] };
      state.groups.set(domain, g);
    }
    g.count = members.length;
    g.bytes = members.reduce((n, r) => n + (r.kind === "c" ? r.bytes || 0 : r.size || 0), 0);
    out.push(g);
    if (!g.folded) for (const r of members) out.push(r);
  }
  return out;
}

/** Folds or unfolds a domain's rows. */
function toggleGroup(g) {
  g.folded = !g.folded;
  state.refilter = true;
  scheduleRender();
}

function render() {
  const list = $("list");
  const wasAtBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - ROW_HEIGHT * 2;
  applyFilter();
  const transactions = state.shownTransactions;
  let conns = 0, estimates = 0;
  for (const r of state.shown) if (r.kind === "c") conns++; else if (r.kind === "e") estimates++;
  $("count").textContent = `${transactions} of ${state.transactions} transactions` + (conns ? `, ${conns} encrypted connections` : "")
    + (estimates ? `, ${estimates} estimated exchanges` : "");
  $("list-spacer").style.height = (state.listed.length * ROW_HEIGHT) + "px";
  // Live, the list follows new rows while it is scrolled to its end (as DevTools does).
  if (state.live && state.running && wasAtBottom && !state.sort.key) list.scrollTop = list.scrollHeight;
  drawRows();
  const empty = $("empty");
  empty.hidden = state.shown.length > 0;
  if (state.shown.length === 0) {
    empty.textContent = state.rows.length === 0
      ? (state.running ? "Waiting for traffic: transactions appear as their responses complete, encrypted connections as their handshakes are seen." : "No transactions in this capture.")
      : "Nothing matches the filter.";
  }
  if (state.view === "waterfall") drawWaterfall();
  updateStatus();
}

// Row elements are reused: a row scrolled out lends its element to one scrolled in, which only
// gets new text (no element is made or removed while scrolling).
let drawn = new Map(); // seq -> element
const spare = [];
function drawRows() {
  const list = $("list");
  const first = Math.max(0, Math.floor(list.scrollTop / ROW_HEIGHT) - 10);
  const last = Math.min(state.listed.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW_HEIGHT) + 10);
  const visible = new Set();
  for (let i = first; i < last; i++) visible.add(state.listed[i]);
  for (const [seq, e] of drawn) if (!visible.has(e._row)) { spare.push(e); e.hidden = true; drawn.delete(seq); }
  const keep = new Map();
  for (let i = first; i < last; i++) {
    const row = state.listed[i];
    let e = drawn.get(row.seq);
    if (!e || e._row !== row) {
      if (e) { spare.push(e); e.hidden = true; }
      e = spare.pop() || newRowElement(list);
      e._row = null;
    }
    if (e._row !== row || e._version !== rowVersion(row)) fillRow(e, row);
    e.hidden = false;
    e.style.top = (i * ROW_HEIGHT) + "px";
    e.classList.toggle("selected", state.selected === row);
    keep.set(row.seq, e);
  }
  drawn = keep;
}

/** What a drawn row shows that can change (a connection's row, opened then finished; a device
 *  named since it was drawn). */
function rowVersion(row) {
  if (row.kind === "g") return "g:" + row.count + ":" + row.bytes + ":" + row.folded;
  return (row.open ? 1 : 0) + ":" + row.time + ":" + row.bytes + ":" + devicesAfter;
}

function statusClass(s) { return s === 0 ? "s-0" : "s-" + Math.floor(s / 100); }

const COLUMNS = ["c-time", "c-client", "c-method", "c-url", "c-status", "c-proto", "c-type", "c-size num", "c-dur num", "c-cache", "c-flags"];

function newRowElement(list) {
  const e = el("div", { class: "row" }, ...COLUMNS.map(c => el("span", { class: c })));
  list.append(e);
  return e;
}

/** Puts a row's text into an element (as text: the strings are the capture's). */
function fillRow(e, row) {
  const values = row.kind === "g" ? [
    [""], [""], [row.folded ? "▸" : "▾", row.folded ? "Unfold" : "Fold"],
    [`${row.domain} — ${row.count} ${row.count === 1 ? "row" : "rows"}, ${fmtBytes(row.bytes)}`, row.domain],
    [""], [""], [""], [""], [""], [""], [""],
  ] : row.kind === "t" ? [
    [fmtClock(row.ts)], [clientText(row), endpoint(row.client, row.clientPort) + (row.device ? " — device " + deviceLabel(row.device) : "")], [row.method], [row.url, row.url],
    [String(row.status || "—"), row.reason, statusClass(row.status)], [row.protocol], [row.type, row.mime],
    [fmtBytes(row.size)], [fmtMs(row.time)], [row.avoidable ? "AVOIDABLE" : row.cache, "", row.avoidable ? "avoidable" : ""],
    [row.flags.join(" "), row.flags.join("\n")],
  ] : row.kind === "e" ? [
    [fmtClock(row.ts)], [clientText(row), row.device ? "device " + deviceLabel(row.device) : ""], ["≈", "Estimated from record sizes and times, without keys"],
    [`${row.url} — ${row.protocol} ${row.word} ${row.index} of ${row.exact ? "" : "≥"}${row.of}${row.alone ? "" : " (sent with others: no response figures)"}`,
     "No method, status or path without keys: sizes and times from the TLS records (or QUIC packets)"],
    ["—"], [row.protocol + " ≈"], [""], [fmtBytes(row.size)], [fmtMs(row.time)], [""], ["inferred"],
  ] : [
    [fmtClock(row.ts)], [clientText(row), row.device ? "device " + deviceLabel(row.device) : ""], [row.transport === "quic" ? "QUIC" : "TLS"],
    [`${row.sni || row.server} — encrypted (${row.version}${row.alpn ? ", " + row.alpn : ""}) ${row.server}${row.open ? " — open" : ""}${estimateText(row.inferred)}`,
     "No keys for this connection: --keylog FILE decrypts it"],
    [""], [row.protocol], [""], [fmtBytes(row.bytes)], [fmtMs(row.time)], [""], [row.flags.join(" ")],
  ];
  e.className = "row" + (row.kind === "c" ? " conn" : row.kind === "e" ? " est" : row.kind === "g" ? " group" : "");
  e.dataset.seq = row.seq;
  const cells = e.children;
  for (let i = 0; i < COLUMNS.length; i++) {
    const [text, title, extra] = values[i];
    const cell = cells[i];
    cell.className = COLUMNS[i] + (extra ? " " + extra : "");
    cell.textContent = shown(text);
    if (title) cell.title = shown(title); else cell.removeAttribute("title");
  }
  e._row = row;
  e._version = rowVersion(row);
}

// ---- The detail pane -------------------------------------------------------------------------

function kvTable(pairs) {
  return el("table", { class: "kv" }, el("tbody", null, ...pairs.map(([k, v]) => el("tr", null, el("td", { text: k }), el("td", { text: v === null || v === undefined ? "" : String(v) })))));
}

function section(title, ...content) { return [el("h3", { text: title }), ...content]; }

/** Opens or closes the detail pane; open, the list keeps the columns that name a request (time,
 *  method, URL, status), as DevTools narrows to its Name column, instead of cutting the rest off. */
function showDetail(open) {
  $("detail").hidden = !open;
  document.querySelector("main").classList.toggle("narrow", open);
}

function select(row) {
  if (row.kind === "g") return toggleGroup(row);
  state.selected = row;
  drawRows();
  if (state.view === "waterfall") drawWaterfall();
  showDetail(true);
  const body = $("d-body");
  body.replaceChildren();
  if (row.kind === "c") {
    $("d-title").textContent = shown(`${row.id} ${row.sni || row.server} (encrypted)`);
    showConnection(body, row.data);
    if (row.estimates && row.estimates.length) body.append(...section("Exchanges (estimated)", exchangeWaterfall(row, null)));
    return;
  }
  if (row.kind === "e") {
    $("d-title").textContent = shown(`≈ ${row.url} — ${row.word} ${row.index} of ${row.exact ? "" : "≥"}${row.of} (estimated)`);
    showEstimate(body, row);
    return;
  }
  $("d-title").textContent = shown(`${row.method} ${row.url}`);
  const entry = state.offline ? Promise.resolve(state.offline.entries[row.seq - 1])
    : fetch(api("/api/entries/" + row.seq)).then(r => r.json());
  entry.then(e => { if (state.selected === row) showEntry(body, row, e); })
    .catch(err => body.append(el("p", { text: "Could not load the transaction: " + err })));
}

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

function curlOf(e) {
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

function fetchOf(e) {
  const req = e.request || {};
  const headers = {};
  for (const h of copiedHeaders(req)) headers[h.name] = h.name in headers ? headers[h.name] + ", " + h.value : h.value;
  const init = { method: req.method || "GET", headers };
  if (req.postData && req.postData.text !== undefined) init.body = req.postData.text;
  return `fetch(${JSON.stringify(req.url || "")}, ${JSON.stringify(init, null, 2)});`;
}

function copyText(text, what) {
  const done = () => showNotice(`Copied ${what}.`);
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(done, () => showNotice(`The browser did not allow copying ${what}.`));
  } else {
    showNotice(`The browser did not allow copying ${what}.`);
  }
}

function copyBar(e) {
  const button = (label, what, make) => el("button", { type: "button", text: label, "aria-label": `${label} (${what})`, onclick: () => copyText(make(), what) });
  return el("div", { class: "copy-bar", role: "toolbar", "aria-label": "Copy this request" },
    button("Copy as cURL", "the request as a curl command", () => curlOf(e)),
    button("Copy as fetch", "the request as a fetch call", () => fetchOf(e)),
    button("Copy URL", "the URL", () => (e.request || {}).url || ""),
    button("Copy as HAR", "the HAR entry", () => JSON.stringify(e, null, 2)));
}

function showEntry(body, row, e) {
  const req = e.request || {}, resp = e.response || {};
  body.append(copyBar(e));
  body.append(...section("General", kvTable([
    ["URL", req.url], ["Method", req.method], ["Status", `${resp.status || "no response"} ${resp.statusText || ""}`],
    ["Protocol", row.protocol + (e._stream !== undefined ? ` (stream ${e._stream})` : "")],
    ["Client", endpoint(e._clientIPAddress || row.client, e._clientPort)], ...(row.device ? [["Device", deviceLabel(row.device)]] : []), ["Server", endpoint(e.serverIPAddress, e._serverPort)],
    ["Connection", e.connection], ["Started", e.startedDateTime], ["Duration", fmtMs(e.time)], ["Page", pageTitle(row.page)],
  ])));
  const flags = e._flags || row.flags;
  if (flags.length) body.append(...section("Anomalies", el("p", { text: flags.join(", "), title: "icy-sniff --list-anomalies (docs/ANOMALIES.md) says what each means" })));
  body.append(...section("Timing", timingTable(e.timings || {})));
  body.append(...section("Cache", ...cacheExplanation(e._cache, row)));
  if (e._webSocket || e._webSocketMessages) body.append(...section("WebSocket", ...webSocketView(e)));
  body.append(...section("Request headers", kvTable((req.headers || []).map(h => [h.name, h.value]))));
  body.append(...section("Response headers", kvTable((resp.headers || []).map(h => [h.name, h.value]))));
  if (state.bodies || state.offline) {
    body.append(...section("Response body", bodyPreview(row, e, true)));
    if ((req.bodySize || 0) > 0 || req.postData) body.append(...section("Request body", bodyPreview(row, e, false)));
  } else {
    body.append(...section("Bodies", el("p", { class: "muted", text: "Bodies are kept with --bodies." })));
  }
  if (e.connection && !state.offline) {
    const holder = el("div");
    body.append(...section("Connection " + e.connection, holder));
    fetch(api("/api/connections/" + encodeURIComponent(e.connection))).then(r => r.ok ? r.json() : null).then(rec => {
      if (rec) showConnection(holder, rec.data, true);
      else holder.append(el("p", { class: "muted", text: "Still open: its figures come when it ends." + (row.tls ? ` ${row.tls}, SNI ${row.sni || "none"}.` : "") }));
    }).catch(() => {});
  }
}

/** A WebSocket's totals and its messages (HAR's _webSocketMessages, as Chrome writes them). */
function webSocketView(e) {
  const ws = e._webSocket || {}, sent = ws.sent || {}, received = ws.received || {}, close = ws.close;
  const out = [kvTable([
    ["Extensions", ws.extensions || "none"],
    ["Sent", `${sent.messages || 0} messages, ${fmtBytes(sent.bytes || 0)} (${fmtBytes(sent.wireBytes || 0)} on the wire)`],
    ["Received", `${received.messages || 0} messages, ${fmtBytes(received.bytes || 0)} (${fmtBytes(received.wireBytes || 0)} on the wire)`],
    ["Closed", close ? `by the ${close.by}, ${close.code ?? ""} ${close.reason || ""}` : "not seen"],
  ])];
  const messages = e._webSocketMessages || [];
  if (messages.length === 0) return out;
  const t0 = messages[0].time;
  const opcodes = { 0: "cont", 1: "text", 2: "binary", 8: "close", 9: "ping", 10: "pong" };
  out.push(el("table", { class: "kv" }, el("tbody", null, ...messages.slice(0, 2000).map(m => el("tr", null,
    el("td", { text: `${m.type === "send" ? "↑" : "↓"} +${fmtMs((m.time - t0) * 1000) || "0 ms"} ${opcodes[m.opcode] || m.opcode} ${fmtBytes(m._size ?? (m.data || "").length)}` }),
    el("td", { text: m.data ? (m.data.length > 300 ? m.data.slice(0, 300) + "…" : m.data) : (state.bodies ? "" : "(data with --bodies)") }))))));
  if (messages.length > 2000) out.push(el("p", { class: "muted", text: `${messages.length - 2000} more messages in the HAR export` }));
  return out;
}

function pageTitle(id) {
  const p = state.pages.get(id);
  return p ? `${p.title} (${id})` : (id || "");
}

function timingTable(t) {
  const phases = ["blocked", "dns", "connect", "ssl", "send", "wait", "receive"];
  const total = phases.filter(p => p !== "ssl").reduce((s, p) => s + Math.max(0, t[p] || 0), 0) || 1;
  return el("table", { class: "kv" }, el("tbody", null, ...phases.filter(p => t[p] !== undefined).map(p => {
    const v = t[p];
    const bar = el("span", { class: "bar p-" + p });
    bar.style.width = Math.max(v > 0 ? 1 : 0, Math.round(200 * Math.max(0, v) / total)) + "px";
    return el("tr", null, el("td", { text: p }), el("td", null, v < 0 ? "—" : fmtMs(v) + " ", v > 0 ? bar : null));
  })));
}

function cacheExplanation(c, row) {
  if (!c) return [el("p", { class: "muted", text: "Not judged." })];
  const words = [];
  if (c.avoidable) words.push("This download was avoidable: a cache holding the earlier response could have served it (or revalidated it) without the full body.");
  if (c.notModified) words.push("The server answered 304 Not Modified to a conditional request.");
  else if (c.conditional) words.push("The request was conditional (If-None-Match / If-Modified-Since).");
  if (!c.storable) words.push("The response may not be stored by a cache.");
  else if (c.freshnessLifetime !== null) words.push(`Fresh for ${c.freshnessLifetime} s from ${c.lifetimeSource}; age ${c.age} s` + (c.freshFor !== null ? `, ${c.freshFor > 0 ? "fresh for " + c.freshFor + " s more" : "stale"}.` : "."));
  if (c.mustRevalidate) words.push("It must be revalidated once stale.");
  return [el("p", { text: `${row.cache}: ${words.join(" ")}` }), kvTable(Object.entries(c))];
}

/** What the records of a connection without keys say (docs/OUTPUT.md, "Encrypted exchanges"). */
function estimateText(inferred) {
  if (!inferred) return "";
  const n = inferred.exchanges;
  const count = n === null || n === undefined ? "" : `, ${inferred.exchanges_exact ? "" : "≥"}${n} ${inferred.protocol === "http/1.1" ? "exchange" : "request"}${n === 1 ? "" : "s"}`;
  return ` — ≈ ${inferred.protocol}${inferred.protocol_from === "records" ? " (inferred)" : ""}${count}`;
}

/** An estimated exchange: what its records say, its phases, and its place among its connection's. */
function showEstimate(body, row) {
  const x = row.estimate, c = state.connections.get(row.conn);
  const v = n => (n === null || n === undefined ? -1 : n);
  body.append(...section("Estimated without keys",
    el("p", { class: "muted", text: "Sizes and times read from the encrypted records, not decrypted: no method, status, path or headers. "
      + (row.alone ? "It had the connection to itself, so the response's bytes and times are its own." : "Other requests were in flight: its response cannot be told apart, so it has no response figures.") }),
    kvTable([["Origin", row.url], ["Protocol", `${row.protocol} (estimated)`], ["Connection", row.conn], ["Client", row.client], ...(row.device ? [["Device", deviceLabel(row.device)]] : []), ["Server", row.server],
      ["Started", new Date(row.ts).toISOString()], ["Request bytes", x.request_bytes], ["Response bytes", x.response_bytes === null ? "not known" : x.response_bytes],
      ["Alone on its connection", x.alone ? "yes" : "no"], ["Records (request, response)", `${x.request_records}, ${x.response_records}`]])));
  body.append(...section("Timing", timingTable({ send: v(x.send_ms), wait: v(x.wait_ms), receive: v(x.receive_ms) })));
  if (!c) return;
  body.append(...section(`Exchanges of ${c.id}`, exchangeWaterfall(c, row)));
  const holder = el("div");
  body.append(...section("Connection " + c.id, holder));
  showConnection(holder, c.data, true);
}

/** The waterfall of one connection's estimated exchanges, from the connection's start: each
 *  exchange's send, wait and receive (a tick where it has none: sent with others). */
function exchangeWaterfall(c, selected) {
  const rows = c.estimates || [];
  const t0 = c.ts;
  const span = Math.max(1, c.time || 0, ...rows.map(r => r.ts - t0 + Math.max(0, r.time || 0)));
  const width = 240, shownRows = rows.slice(0, 1000);
  const holder = el("div", { class: "xwf", role: "list", "aria-label": `${rows.length} estimated exchanges of ${c.id} over ${fmtMs(span)}` });
  holder.append(el("div", { class: "wf-axis" }, el("div", { class: "wf-label", text: `${rows.length} ${rows.length === 1 ? "exchange" : "exchanges"}, ${fmtMs(span)}` })));
  for (const r of shownRows) {
    const bar = el("div", { class: "wf-bar" });
    bar.style.left = ((r.ts - t0) * width / span) + "px";
    let drawnPhase = false;
    for (const p of ["send", "wait", "receive"]) {
      const ms = r.phases[p];
      if (ms === null || ms === undefined || ms <= 0) continue;
      const s = el("span", { class: "p-" + p, title: `${p} ${fmtMs(ms)}` });
      s.style.width = Math.max(1, ms * width / span) + "px";
      bar.append(s);
      drawnPhase = true;
    }
    if (!drawnPhase) bar.append(el("span", { class: "p-unknown", title: "sent with other requests: no response figures" }));
    const track = el("div", { class: "wf-track" }, bar);
    track.style.width = (width + 8) + "px";
    const line = el("div", { class: "wf-row" + (r === selected ? " selected" : ""), role: "listitem" },
      el("div", { class: "wf-label", text: `#${r.index} ↑${fmtBytes(r.requestBytes)} ↓${r.size === null || r.size === undefined ? "?" : fmtBytes(r.size)}` }), track);
    line.addEventListener("click", () => select(r));
    holder.append(line);
  }
  if (rows.length > shownRows.length) holder.append(el("p", { class: "muted", text: `${rows.length - shownRows.length} more in --format ndjson` }));
  return holder;
}

function showConnection(holder, d, nested) {
  const pairs = [["Transport", d.transport], ["Client", d.client], ...(d.device ? [["Device", deviceLabel(d.device)]] : []), ["Server", d.server], ["Start", d.start], ["Duration", fmtMs(d.duration)],
    ["Bytes from client", d.bytesFromClient], ["Bytes from server", d.bytesFromServer], ["Packets", d.packets], ["Handshake RTT", fmtMs(d.handshakeRTT)],
    ["Gaps", `${d.gaps} (${d.missedBytes} bytes)`], ["History", d.history], ["Anomalies", (d.anomalies || []).join(" ")]];
  holder.append(kvTable(pairs));
  if (d.tls) { holder.append(el("h3", { text: nested ? "TLS" : "TLS handshake" })); holder.append(kvTable(Object.entries(d.tls).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v]))); }
  if (d.quic) { holder.append(el("h3", { text: "QUIC" })); holder.append(kvTable(Object.entries(d.quic).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v]))); }
  if (d.inferred) { holder.append(el("h3", { text: "Estimated without keys" })); holder.append(kvTable(Object.entries(d.inferred).filter(([k]) => k !== "estimates"))); }
}

// ---- Bodies: an image as an image, JSON folded, text decoded, the rest as hex ------------------

function bodyPreview(row, e, response) {
  const holder = el("div");
  const mime = response ? ((e.response || {}).content || {}).mimeType || "" : ((e.request || {}).postData || {}).mimeType || "";
  let bytes;
  if (state.offline) {
    const content = response ? (e.response || {}).content || {} : (e.request || {}).postData || {};
    if (content.text === undefined) { holder.append(el("p", { class: "muted", text: "Not in this HAR." })); return holder; }
    bytes = Promise.resolve(content.encoding === "base64" ? Uint8Array.from(atob(content.text), c => c.charCodeAt(0)) : new TextEncoder().encode(content.text));
  } else {
    const kept = row.bodies[response ? 1 : 0];
    if (kept < 0) { holder.append(el("p", { class: "muted", text: "No body kept." })); return holder; }
    const url = api(`/api/bodies/${row.seq}/${response ? "response" : "request"}`);
    holder.append(el("p", null, el("a", { href: url, download: `${response ? "response" : "request"}-${row.seq}.bin`, text: `Download the raw body (${fmtBytes(kept)})` })));
    bytes = fetch(url).then(r => r.arrayBuffer()).then(b => new Uint8Array(b));
  }
  bytes.then(b => holder.append(previewOf(b, mime))).catch(err => holder.append(el("p", { text: String(err) })));
  return holder;
}

function previewOf(bytes, mime) {
  const type = mime.split(";")[0].trim().toLowerCase();
  if (bytes.length === 0) return el("p", { class: "muted", text: "Empty." });
  if (type.startsWith("image/") && type !== "image/svg+xml") {
    // A blob: URL of this page (CSP img-src blob:), never the server's URL as a page.
    const img = el("img", { class: "preview", alt: "response image" });
    img.src = URL.createObjectURL(new Blob([bytes], { type }));
    return img;
  }
  const charset = (/charset=([^;]+)/i.exec(mime) || [])[1];
  const looksText = type.startsWith("text/") || type.includes("json") || type.includes("xml") || type.includes("javascript") || type === "image/svg+xml"
    || type.includes("x-www-form-urlencoded");
  if (looksText) {
    let text;
    try { text = new TextDecoder((charset || "utf-8").trim(), { fatal: false }).decode(bytes); } catch (_) { text = new TextDecoder().decode(bytes); }
    if (type.includes("json")) {
      try { return el("div", { class: "json" }, jsonTree(JSON.parse(text), null, 0)); } catch (_) { /* not JSON after all: as text */ }
    }
    return el("pre", { class: "body", text: text.length > 200000 ? text.slice(0, 200000) + "\n… (cut)" : text });
  }
  return el("pre", { class: "body", text: hexDump(bytes.subarray(0, 4096)) + (bytes.length > 4096 ? `\n… ${bytes.length - 4096} more bytes` : "") });
}

function jsonTree(v, key, depth) {
  const label = key === null ? [] : [el("span", { class: "k", text: JSON.stringify(key) }), ": "];
  if (v !== null && typeof v === "object") {
    const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    const d = el("details", depth < 2 ? { open: true } : null,
      el("summary", null, ...label, Array.isArray(v) ? `[${entries.length}]` : `{${entries.length}}`));
    for (const [k, x] of entries.slice(0, 5000)) d.append(jsonTree(x, Array.isArray(v) ? null : k, depth + 1));
    return d;
  }
  const cls = typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b";
  return el("div", { class: "line" }, ...label, el("span", { class: cls, text: JSON.stringify(v) }));
}

function hexDump(b) {
  const lines = [];
  for (let i = 0; i < b.length; i += 16) {
    const chunk = b.subarray(i, i + 16);
    const hex = [...chunk].map(x => x.toString(16).padStart(2, "0")).join(" ");
    const ascii = [...chunk].map(x => x >= 32 && x < 127 ? String.fromCharCode(x) : ".").join("");
    lines.push(i.toString(16).padStart(8, "0") + "  " + hex.padEnd(48) + "  " + ascii);
  }
  return lines.join("\n");
}

// ---- The waterfall (a page's, or a connection's) ----------------------------------------------

const PHASES = ["dns", "connect", "ssl", "send", "wait", "receive"];

function waterfallGroups() {
  const group = $("wf-group").value;
  const counts = new Map();
  for (const r of state.shown) if (r.kind === "t" || (r.kind === "e" && group !== "page")) {
    const k = group === "page" ? r.page : r.conn;
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  return [...counts.keys()].filter(k => k !== undefined).map(k => {
    if (group === "page") {
      const p = state.pages.get(k);
      return { key: k, label: `${p ? p.title : k} — ${counts.get(k)} requests${p ? " — " + p.client : ""}` };
    }
    const c = state.connections.get(k);
    const first = state.shown.find(r => (r.kind === "t" || r.kind === "e") && r.conn === k);
    const estimated = first && first.kind === "e" ? " (estimated)" : "";
    return { key: k, label: `${k} ${first ? first.host : ""} ${c ? c.server : first ? first.server : ""} — ${counts.get(k)} requests${estimated}` };
  });
}

function drawWaterfall() {
  const which = $("wf-which");
  const groups = waterfallGroups();
  const current = which.value;
  which.replaceChildren(...groups.map(g => el("option", { value: g.key, text: g.label })));
  if (groups.some(g => g.key === current)) which.value = current;
  else if (state.selected && (state.selected.kind === "t" || state.selected.kind === "e")) which.value = $("wf-group").value === "page" ? state.selected.page : state.selected.conn;
  const key = which.value;
  const byPage = $("wf-group").value === "page";
  const rows = state.shown.filter(r => (r.kind === "t" || (r.kind === "e" && !byPage)) && (byPage ? r.page === key : r.conn === key)).sort((a, b) => a.ts - b.ts || a.seq - b.seq);
  const wf = $("wf");
  wf.replaceChildren();
  if (rows.length === 0) { wf.append(el("div", { class: "empty", text: "No transactions to draw: choose a page or a connection." })); return; }
  const t0 = rows[0].ts;
  const end = Math.max(...rows.map(r => r.ts + Math.max(0, r.time || 0)));
  const span = Math.max(1, end - t0);
  const width = Math.max(200, wf.clientWidth - 440); // the labels, and room for the last duration
  const scale = state.wfScale || width / span;
  state.wfScaleDrawn = scale;
  const track = Math.ceil(span * scale) + 80;
  const axis = el("div", { class: "wf-axis" }, el("div", { class: "wf-label", text: `${rows.length} requests, ${fmtMs(span)}` }));
  const ticks = el("div", { class: "wf-track" });
  ticks.style.width = track + "px";
  const step = niceStep(span / Math.max(1, track / 110));
  for (let t = 0; t <= span + step / 2; t += step) {
    const tick = el("span", { class: "wf-tick", text: fmtMs(t) });
    tick.style.left = (t * scale) + "px";
    ticks.append(tick);
  }
  axis.append(ticks);
  wf.append(axis);
  const seenConnections = new Set();
  for (const r of rows) {
    const isNew = !seenConnections.has(r.conn) && (r.phases.connect !== null && r.phases.connect >= 0);
    seenConnections.add(r.conn);
    const label = r.kind === "e"
      ? el("div", { class: "wf-label", title: `${r.url}\nestimated without keys` }, `≈ ${r.protocol} ${r.word} ${r.index} of ${r.exact ? "" : "≥"}${r.of}`)
      : el("div", { class: "wf-label", title: `${r.method} ${r.url}\n${r.conn}${isNew ? " (new connection)" : " (reused)"}` },
      el("span", { class: "conn-tag" + (isNew ? " new" : ""), text: byPage ? r.conn : "" }), " ", el("span", { class: statusClass(r.status), text: String(r.status || "—") }), " ",
      shortURL(r.url));
    const bar = el("div", { class: "wf-bar" });
    bar.style.left = ((r.ts - t0) * scale) + "px";
    for (const p of PHASES) {
      let v = r.phases[p];
      if (p === "connect" && v > 0 && r.phases.ssl > 0) v -= r.phases.ssl; // HAR's connect includes ssl
      if (v === null || v === undefined || v <= 0) continue;
      const s = el("span", { class: "p-" + p, title: `${p} ${fmtMs(r.phases[p])}` });
      s.style.width = Math.max(1, v * scale) + "px";
      bar.append(s);
    }
    if (r.kind === "e" && !bar.firstChild) bar.append(el("span", { class: "p-unknown", title: "sent with other requests: no response figures" }));
    const when = el("span", { class: "wf-time", text: fmtMs(r.time) });
    when.style.left = ((r.ts - t0 + Math.max(0, r.time || 0)) * scale + 4) + "px";
    const t = el("div", { class: "wf-track" }, bar, when);
    t.style.width = track + "px";
    const line = el("div", { class: "wf-row" + (state.selected === r ? " selected" : "") }, label, t);
    line.addEventListener("click", () => select(r));
    wf.append(line);
  }
}

function niceStep(raw) {
  const pow = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

function shortURL(url) {
  try { const u = new URL(url); return u.pathname + u.search; } catch (_) { return url; }
}

function zoom(factor) {
  // From the scale last drawn (the fitted one until the first zoom).
  state.wfScale = (state.wfScale || state.wfScaleDrawn || 1) * factor;
  drawWaterfall();
}

// ---- Exports and opening a HAR ---------------------------------------------------------------

function download(name, blob) {
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function exportShown(format) {
  applyFilter();
  const seqs = state.shown.filter(r => r.kind === "t").map(r => r.seq);
  if (state.offline) {
    const entries = seqs.map(s => state.offline.entries[s - 1]);
    if (format === "har") {
      const pages = state.offline.har.log.pages || [];
      const used = new Set(entries.map(e => e.pageref));
      const log = { version: "1.2", creator: state.offline.har.log.creator || { name: "icy-sniff", version: "" }, pages: pages.filter(p => used.has(p.id)), entries };
      download("icy-sniff.har", new Blob([JSON.stringify({ log }, null, 2)], { type: "application/json" }));
    } else {
      download("icy-sniff.ndjson", new Blob([entries.map(e => JSON.stringify(e)).join("\n") + "\n"], { type: "application/x-ndjson" }));
    }
    return;
  }
  fetch(api("/api/export." + format), { method: "POST", body: JSON.stringify(seqs), headers: { "Content-Type": "application/json" } })
    .then(r => r.blob()).then(b => download("icy-sniff." + format, b));
}

function openHAR(file) {
  const reader = new FileReader();
  reader.onload = () => {
    let har;
    try { har = JSON.parse(reader.result); } catch (err) { showNotice(`${file.name} is not JSON: ${err.message}`); return; }
    if (!har || !har.log || !Array.isArray(har.log.entries)) { showNotice(`${file.name} is not a HAR (no log.entries)`); return; }
    if (events) events.close();
    state.offline = { name: file.name, entries: har.log.entries, har };
    for (const e of drawn.values()) { e.hidden = true; spare.push(e); }
    drawn = new Map();
    state.rows = []; state.fresh = []; state.refilter = true; state.transactions = har.log.entries.length; state.bySeq.clear(); state.connections.clear(); state.pages.clear(); state.selected = null;
    for (const k of Object.keys(choices)) choices[k].clear();
    // icy-sniff's HAR names its devices (log._devices); a browser's has none.
    deviceNames.clear();
    for (const d of har.log._devices || []) if (d && d.mac) deviceNames.set(d.mac, (d.names || []).map(n => n.name).filter(Boolean));
    devicesAfter++;
    for (const p of har.log.pages || []) state.pages.set(p.id, { id: p.id, title: p.title, started: Date.parse(p.startedDateTime), client: p._client || "" });
    har.log.entries.forEach((e, i) => {
      const row = rowFromEntry(e, i + 1);
      state.rows.push(row);
      state.bySeq.set(row.seq, row);
      noteChoice(row);
    });
    state.running = false;
    state.live = false;
    showDetail(false);
    fillChoices();
    render();
  };
  reader.readAsText(file);
}

/** "address:port", or what of it is known ("" when neither: a browser's HAR names no client). */
function endpoint(address, port) {
  if (!address) return "";
  return port ? `${address.includes(":") ? "[" + address + "]" : address}:${port}` : address;
}

/** Chrome's `_resourceType` in the page's vocabulary of types: what the browser loaded the
 *  resource as, which says more than a 304's `x-unknown` MIME type. */
const CHROME_TYPES = { document: "document", stylesheet: "stylesheet", image: "image", media: "media", font: "font", script: "script", websocket: "websocket" };

/** A HAR entry (icy-sniff's, a browser's) as a row. */
function rowFromEntry(e, seq) {
  const req = e.request || {}, resp = e.response || {}, t = e.timings || {};
  const phase = v => (v === undefined || v < 0 ? null : v);
  const version = (resp.httpVersion || req.httpVersion || "").toLowerCase();
  const mime = (resp.content || {}).mimeType || "";
  const type = CHROME_TYPES[e._resourceType] || typeOf(mime === "x-unknown" ? "" : mime, req.url, resp.status);
  return {
    seq, kind: "t", ts: Date.parse(e.startedDateTime), client: e._clientIPAddress || "", clientPort: e._clientPort || "", device: e._device || "",
    server: (e.serverIPAddress || "") + (e._serverPort ? ":" + e._serverPort : ""), method: req.method || "", url: req.url || "",
    host: hostOf(req.url), status: resp.status || 0, reason: resp.statusText || "",
    protocol: version === "http/2.0" || version === "h2" ? "h2" : version === "http/3" || version === "h3" ? "h3" : version,
    mime, type, size: (resp.content || {}).size, time: e.time,
    phases: { dns: phase(t.dns), connect: phase(t.connect), ssl: phase(t.ssl), send: phase(t.send), wait: phase(t.wait), receive: phase(t.receive) },
    cache: (e._cache || {}).verdict || "", avoidable: !!(e._cache || {}).avoidable, flags: e._flags || [], conn: e.connection || "",
    page: e.pageref, bodies: [-1, -1],
  };
}

// ---- Status, and the live stream -------------------------------------------------------------

let info = {};
function updateStatus() {
  const s = $("status");
  if (state.offline) {
    $("source").textContent = shown(state.offline.name);
    s.textContent = "opened HAR";
    s.className = "status";
    return;
  }
  s.className = "status" + (state.running && state.live ? " live" : "");
  s.textContent = state.running ? (state.live ? "live" : "reading…") : (state.live ? "stopped" : "read to the end");
}

function showNotice(text) {
  const n = $("notice");
  n.textContent = text;
  n.hidden = !text;
}

let events = null;
async function start() {
  filtersFromHash();
  setView(state.view);
  try {
    info = await (await fetch(api("/api/info"))).json();
  } catch (err) {
    showNotice("The server does not answer: " + err);
    return;
  }
  if (info.error) { showNotice(info.error); return; }
  state.live = info.live;
  state.bodies = info.bodies;
  state.running = info.running;
  $("source").textContent = shown(info.input);
  // What is there already, in pages; then the stream from the last one on.
  for (;;) {
    const page = await (await fetch(api(`/api/records?after=${state.after}&limit=5000`))).json();
    ingest(page.records);
    state.running = page.running;
    if (page.records.length === 0 || state.after >= page.total) break;
  }
  state.loaded = true;
  render();
  refreshDevices();
  askSearch();   // a search or header filter from the page's address
  events = new EventSource(api(`/api/events?after=${state.after}`));
  events.addEventListener("records", ev => { ingest(JSON.parse(ev.data)); refreshDevices(); refreshHeaderTerms(); });
  events.addEventListener("status", ev => {
    const s = JSON.parse(ev.data);
    state.running = s.running;
    updateStatus();
    refreshDevices();
  });
  events.addEventListener("skipped", ev => {
    const s = JSON.parse(ev.data);
    state.skipped = s.skipped;
    showNotice(`${s.skipped} updates skipped; reload`);
  });
  events.onerror = () => {
    if (!state.running) return;
    showNotice("The connection to icy-sniff was lost; reload when it runs again");
  };
}

function setView(view) {
  state.view = view;
  $("list-view").hidden = view !== "list";
  $("waterfall-view").hidden = view !== "waterfall";
  $("view-list").classList.toggle("active", view === "list");
  $("view-waterfall").classList.toggle("active", view === "waterfall");
  $("view-list").setAttribute("aria-selected", String(view === "list"));
  $("view-waterfall").setAttribute("aria-selected", String(view === "waterfall"));
  filtersToHash();
  scheduleRender();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const k of filterFields) $("f-" + k).addEventListener("input", onFilterChange);
  $("f-q").addEventListener("input", suggestQuery);
  $("f-q").addEventListener("focus", suggestQuery);
  $("f-encrypted").addEventListener("change", onFilterChange);
  $("f-group").addEventListener("change", () => { state.groupBy = $("f-group").checked; onFilterChange(); });
  $("filters").addEventListener("submit", ev => ev.preventDefault());
  $("f-clear").addEventListener("click", () => {
    state.refilter = true;
    for (const k of filterFields) $("f-" + k).value = "";
    $("f-encrypted").checked = true;
    onFilterChange();
  });
  $("list").addEventListener("scroll", () => drawRows(), { passive: true });
  $("list").addEventListener("click", ev => {
    const e = ev.target.closest(".row");
    if (e && e._row) select(e._row);
  });
  // The list's keys, as DevTools' network panel has them: up and down, a page, the first and the
  // last row move the selection (and the detail pane with it); Enter opens the selected row.
  $("list").addEventListener("keydown", ev => {
    const list = $("list");
    const page = Math.max(1, Math.floor(list.clientHeight / ROW_HEIGHT) - 1);
    const rows = state.listed;
    const at = rows.indexOf(state.selected);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, PageDown: at + page, PageUp: at - page, Home: 0, End: rows.length - 1,
                    Enter: at };
    if (!(ev.key in moves) || rows.length === 0) return;
    ev.preventDefault();
    let i = Math.min(rows.length - 1, Math.max(0, at < 0 && ev.key !== "End" ? 0 : moves[ev.key]));
    // The arrows step over the domains' lines (a click folds them); Enter on none.
    const step = ev.key === "ArrowUp" || ev.key === "PageUp" || ev.key === "End" ? -1 : 1;
    while (rows[i] && rows[i].kind === "g" && rows[i + step]) i += step;
    if (!rows[i] || rows[i].kind === "g") return;
    select(rows[i]);
    const top = i * ROW_HEIGHT;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (top + ROW_HEIGHT > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW_HEIGHT - list.clientHeight;
  });
  // Anywhere: Esc closes the detail pane (back to the list); "/" and Ctrl+F go to the search.
  document.addEventListener("keydown", ev => {
    const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.target instanceof HTMLTextAreaElement;
    if (ev.key === "Escape" && !$("detail").hidden) {
      showDetail(false);
      state.selected = null;
      drawRows();
      $("list").focus();
    } else if ((ev.key === "/" && !typing) || (ev.key === "f" && (ev.ctrlKey || ev.metaKey))) {
      ev.preventDefault();
      $("f-q").focus();
      $("f-q").select();
    }
  });
  applyColumns();
  buildColumnsMenu();
  addColumnGrips();
  $("columns-button").addEventListener("click", () => showColumnsMenu($("columns-menu").hidden));
  document.addEventListener("click", ev => {
    if (!$("columns-menu").hidden && !ev.target.closest(".menu-anchor")) showColumnsMenu(false);
  });
  $("columns-menu").addEventListener("keydown", ev => {
    if (ev.key === "Escape") { ev.stopPropagation(); showColumnsMenu(false); $("columns-button").focus(); }
  });
  for (const h of document.querySelectorAll("#list-head [data-sort]")) {
    h.addEventListener("click", () => {
      const key = h.dataset.sort;
      if (state.sort.key === key) {
        if (state.sort.dir === 1) state.sort.dir = -1; else state.sort = { key: null, dir: 1 };
      } else state.sort = { key, dir: 1 };
      for (const o of document.querySelectorAll("#list-head [data-sort]")) o.className = o.className.replace(/ sorted-(asc|desc)/, "");
      if (state.sort.key) h.className += state.sort.dir === 1 ? " sorted-asc" : " sorted-desc";
      state.refilter = true;
      scheduleRender();
    });
  }
  $("d-close").addEventListener("click", () => { showDetail(false); state.selected = null; drawRows(); });
  $("view-list").addEventListener("click", () => setView("list"));
  $("view-waterfall").addEventListener("click", () => setView("waterfall"));
  $("wf-group").addEventListener("change", () => { $("wf-which").value = ""; state.wfScale = null; drawWaterfall(); });
  $("wf-which").addEventListener("change", () => { state.wfScale = null; drawWaterfall(); });
  $("wf-in").addEventListener("click", () => zoom(1.5));
  $("wf-out").addEventListener("click", () => zoom(1 / 1.5));
  $("wf-fit").addEventListener("click", () => { state.wfScale = null; drawWaterfall(); });
  $("wf").addEventListener("wheel", ev => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 1.25 : 0.8);
  }, { passive: false });
  $("export-har").addEventListener("click", () => exportShown("har"));
  $("export-ndjson").addEventListener("click", () => exportShown("ndjson"));
  $("open-har").addEventListener("change", ev => { if (ev.target.files[0]) openHAR(ev.target.files[0]); });
  window.addEventListener("resize", scheduleRender);
  // An address with another filter (pasted, back and forward): that filter.
  window.addEventListener("hashchange", () => {
    filtersFromHash();
    setView(state.view);
  });
  start();
});
