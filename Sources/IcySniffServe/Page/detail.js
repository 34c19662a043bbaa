// The detail pane: a transaction (headers, timing, cache, bodies), an encrypted connection, an
// exchange estimated without keys.

import { copyBar } from "./copy.js";
import { drawRows, toggleGroup } from "./list.js";
import { deviceLabel } from "./records.js";
import { state } from "./state.js";
import { $, api, el, endpoint, fmtBytes, fmtMs, shown } from "./util.js";
import { drawWaterfall } from "./waterfall.js";

// ---- The detail pane -------------------------------------------------------------------------

function kvTable(pairs) {
  return el("table", { class: "kv" }, el("tbody", null, ...pairs.map(([k, v]) => el("tr", null, el("td", { text: k }), el("td", { text: v === null || v === undefined ? "" : String(v) })))));
}

function section(title, ...content) { return [el("h3", { text: title }), ...content]; }

/** Opens or closes the detail pane; open, the list keeps the columns that name a request (time,
 *  method, URL, status), as DevTools narrows to its Name column, instead of cutting the rest off. */
export function showDetail(open) {
  $("detail").hidden = !open;
  document.querySelector("main").classList.toggle("narrow", open);
}

/** A transaction's HAR entry: the opened HAR's, or the server's (redacted as in the files). */
export function entryOf(row) {
  return state.offline ? Promise.resolve(state.offline.entries[row.seq - 1])
    : fetch(api("/api/entries/" + row.seq)).then(r => r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`)));
}

export function select(row) {
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
  entryOf(row).then(e => { if (state.selected === row) showEntry(body, row, e); })
    .catch(err => body.append(el("p", { text: "Could not load the transaction: " + err })));
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
export function estimateText(inferred) {
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
