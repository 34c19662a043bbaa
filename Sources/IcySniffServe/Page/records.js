// What the server sends (NDJSON rows, connection records, a HAR's entries) as the list's rows;
// the names devices gave themselves; the choices the filters offer.

import { matches, readFilters } from "./filters.js";
import { drawRows, scheduleRender } from "./list.js";
import { state } from "./state.js";
import { $, api, el, hostOf, intern, parseTime, typeOf } from "./util.js";

// ---- Records -> rows -------------------------------------------------------------------------

// A run can hold a million transactions: a row keeps one copy of each string many rows share
// (`intern`: server, host, MIME type, method, connection, page…) and one empty flag list and
// "no bodies" pair for all (never changed in place), which took ~170 of ~440 bytes a row.
const NO_FLAGS = Object.freeze([]);
const NO_BODIES = Object.freeze([-1, -1]);

/** A transaction's NDJSON row (docs/OUTPUT.md, NDJSON) as the page keeps it: the fields it shows and filters on. */
function rowFromRecord(rec) {
  const d = rec.data;
  const ts = parseTime(d.ts);
  return {
    seq: rec.seq, kind: "t", ts, client: intern(d.client_ip), clientPort: d.client_port, device: intern(d.device || ""),
    server: intern(d.server_ip + ":" + d.server_port),
    method: intern(d.method || ""), url: d.url || (d.host ? d.host + (d.target || "") : ""), host: intern(d.host || ""),
    status: d.status === null ? 0 : d.status, reason: intern(d.reason || ""), protocol: intern(d.protocol || ""),
    mime: intern(d.content_type || ""), type: typeOf(d.content_type, d.url, d.status),
    size: d.response_body_len, time: d.time_ms,
    phases: { dns: d.dns_ms, connect: d.connect_ms, ssl: d.ssl_ms, send: d.send_ms, wait: d.wait_ms, receive: d.receive_ms },
    cache: intern(d.cache || ""), avoidable: !!d.cache_avoidable, flags: d.flags && d.flags.length ? d.flags : NO_FLAGS,
    conn: intern(d.connection), page: intern(rec.page), bodies: rec.bodies && (rec.bodies[0] >= 0 || rec.bodies[1] >= 0) ? rec.bodies : NO_BODIES, sni: intern(d.sni), tls: intern(d.tls_version),
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

export function ingest(records) {
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

export const deviceNames = new Map();   // link-layer address -> its names, its own name first
export let devicesAfter = 0;            // the last change of the server's device names the page has
let devicesAsking = null;        // the request under way, if any
let devicesAskedAt = 0, devicesLater = null; // at most one request a second: the rest wait

/** A device as people know it: "Pixel-7 (02:00:00:00:00:11)"; its address alone when unnamed. */
export function deviceLabel(mac) {
  const names = deviceNames.get(mac);
  return names && names.length ? `${names[0]} (${mac})` : mac;
}

/** The name a row's client goes by: its device's first name, else its address. */
export function clientText(row) {
  const names = row.device ? deviceNames.get(row.device) : null;
  return names && names.length ? names[0] : row.client;
}

/** Asks the server what devices were named since the last answer (one request at a time; a
 *  run that names a phone while the page is open shows it at the next records). */
export function refreshDevices() {
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

/** The devices a HAR names (its log._devices, as --devices writes them), in place of the run's. */
export function nameDevices(devices) {
  deviceNames.clear();
  for (const d of devices) if (d && d.mac) deviceNames.set(d.mac, (d.names || []).map(n => n.name).filter(Boolean));
  devicesAfter++;
}

// ---- Filter choices (devices, protocols, methods, cache verdicts, flags seen) -----------------

/** The values the filters' selects offer (client … flags), and those the search box completes
 *  (status … scheme; at most 1,000 each): gathered as rows come, so that completing a word never
 *  reads a million rows. */
export const choices = { client: new Set(), protocol: new Set(), method: new Set(), cache: new Set(), flags: new Set(),
  status: new Set(), domain: new Set(), mime: new Set(), type: new Set(), scheme: new Set() };
const mimeTypes = new Map();   // Content-Type -> its type without parameters (computed once each)

export function noteChoice(row) {
  let changed = false;
  const add = (set, v) => { if (v && !set.has(v)) { set.add(v); changed = true; } };
  // A device: its link-layer address where the capture names one (its IPv4 and IPv6 rows alike).
  add(choices.client, row.device || row.client);
  add(choices.protocol, row.protocol);
  add(choices.method, row.method);
  if (row.cache) add(choices.cache, row.cache.split(" ")[0]);
  for (const f of row.flags) add(choices.flags, f);
  const note = (set, v) => { if (v && set.size < 1000) set.add(v); };   // completion only: no select changes
  if (row.kind === "t") { note(choices.status, String(row.status)); note(choices.type, row.type); }
  note(choices.domain, row.host || row.sni);
  if (row.mime) {
    let type = mimeTypes.get(row.mime);
    if (type === undefined) { type = row.mime.split(";")[0].trim(); if (mimeTypes.size < 1000) mimeTypes.set(row.mime, type); }
    note(choices.mime, type);
  }
  const colon = row.url ? row.url.indexOf(":") : -1;
  if (colon > 0 && colon < 12) note(choices.scheme, row.url.slice(0, colon));
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

export function fillChoices() {
  fillSelect($("f-client"), choices.client, 1, deviceLabel);
  fillSelect($("f-protocol"), choices.protocol, 1);
  fillSelect($("f-method"), choices.method, 1);
  fillSelect($("f-cache"), choices.cache, 2);
  fillSelect($("f-flags"), choices.flags, 3);
}

/** Chrome's `_resourceType` in the page's vocabulary of types: what the browser loaded the
 *  resource as, which says more than a 304's `x-unknown` MIME type. */
const CHROME_TYPES = { document: "document", stylesheet: "stylesheet", image: "image", media: "media", font: "font", script: "script", websocket: "websocket" };

/** A HAR entry (icy-sniff's, a browser's) as a row. */
export function rowFromEntry(e, seq) {
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
