// The list: the rows the filter shows (only the visible ones in the DOM), grouped by domain when
// asked, as an ARIA grid (its header row is the first child, the rows carry their index).

import { COLUMNS, columnOrder } from "./columns.js";
import { estimateText } from "./detail.js";
import { matches, readFilters } from "./filters.js";
import { updateStatus } from "./live.js";
import { clientText, deviceLabel, devicesAfter } from "./records.js";
import { state } from "./state.js";
import { $, ROW_HEIGHT, el, endpoint, fmtBytes, fmtClock, fmtMs, shown } from "./util.js";
import { drawWaterfall } from "./waterfall.js";

// ---- The list (only the visible rows are in the DOM) -----------------------------------------

let renderQueued = false;
export function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

export function applyFilter() {
  const f = readFilters();
  const { key, dir } = state.sort;
  // Live, most frames only add rows: those that match go to the end (in arrival order, unsorted).
  if (!state.refilter && !key && !state.groupBy) {
    for (const r of state.fresh) if (matches(r, f)) {
      state.shown.push(r);
      count(r);
    }
    state.fresh = [];
    state.listed = state.shown;
    return;
  }
  state.refilter = false;
  state.fresh = [];
  // One pass over the rows: with a million of them, each pass costs a cache miss a row.
  const passed = [];
  state.shownTransactions = state.shownConnections = state.shownEstimates = 0;
  for (const r of state.rows) if (matches(r, f)) { passed.push(r); count(r); }
  if (key) {
    const get = key === "flags" ? (r => r.flags.join(",")) : (r => r[key]);
    passed.sort((a, b) => {
      const x = get(a), y = get(b);
      return (x < y ? -1 : x > y ? 1 : a.seq - b.seq) * dir;
    });
  }
  state.shown = passed;
  state.listed = state.groupBy ? grouped(passed) : passed;
}

/** Counts a shown row by its kind (the list's count line). */
function count(r) {
  if (r.kind === "t") state.shownTransactions++;
  else if (r.kind === "c") state.shownConnections++;
  else if (r.kind === "e") state.shownEstimates++;
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
export function toggleGroup(g) {
  g.folded = !g.folded;
  state.refilter = true;
  scheduleRender();
}

export function render() {
  const list = $("list");
  const wasAtBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - ROW_HEIGHT * 2;
  applyFilter();
  const transactions = state.shownTransactions, conns = state.shownConnections, estimates = state.shownEstimates;
  $("count").textContent = `${transactions} of ${state.transactions} transactions` + (conns ? `, ${conns} encrypted connections` : "")
    + (estimates ? `, ${estimates} estimated exchanges` : "");
  $("list-spacer").style.height = (state.listed.length * ROW_HEIGHT) + "px";
  list.setAttribute("aria-rowcount", String(state.listed.length + 1));
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
export function drawRows() {
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
    if (e.hidden) e.hidden = false;
    // Below the header row, which stays at the top of the scrolled list.
    if (e._index !== i) {
      e._index = i;
      e.style.top = ((i + 1) * ROW_HEIGHT) + "px";
      e.setAttribute("aria-rowindex", String(i + 2));
    }
    const selected = state.selected === row;
    setClass(e, "row" + (row.kind === "c" ? " conn" : row.kind === "e" ? " est" : row.kind === "g" ? " group" : "") + (selected ? " selected" : ""));
    const said = String(selected);
    if (e.getAttribute("aria-selected") !== said) e.setAttribute("aria-selected", said);
    keep.set(row.seq, e);
  }
  drawn = keep;
  // The selection as the grid's active row (read out as the keys move it), when drawn.
  const active = state.selected && drawn.get(state.selected.seq);
  if (active && active._row === state.selected) list.setAttribute("aria-activedescendant", active.id);
  else list.removeAttribute("aria-activedescendant");
}

/** Makes the row elements again (the columns' order changed). */
export function remakeRowElements() {
  for (const e of [...drawn.values(), ...spare]) e.remove();
  drawn = new Map();
  spare.length = 0;
  drawRows();
}

/** Lets go of every drawn row (a HAR opened in the page replaces the run's rows). */
export function forgetDrawnRows() {
  for (const e of drawn.values()) { e.hidden = true; spare.push(e); }
  drawn = new Map();
}

/** What a drawn row shows that can change (a connection's row, opened then finished; a device
 *  named since it was drawn). */
function rowVersion(row) {
  if (row.kind === "g") return "g:" + row.count + ":" + row.bytes + ":" + row.folded;
  return (row.open ? 1 : 0) + ":" + row.time + ":" + row.bytes + ":" + devicesAfter;
}

export function statusClass(s) { return s === 0 ? "s-0" : "s-" + Math.floor(s / 100); }

function newRowElement(list) {
  const e = el("div", { class: "row", role: "row" }, ...columnOrder.map(() => el("span", { role: "gridcell" })));
  list.append(e);
  return e;
}

/** What a row's duration took, phase by phase (the duration cell's tooltip). */
function phasesText(row) {
  if (!row.phases) return "";
  const parts = Object.entries(row.phases).filter(([, v]) => v !== null && v !== undefined && v >= 0).map(([p, v]) => `${p} ${fmtMs(v) || "0 ms"}`);
  return parts.join(" · ");
}

function setClass(e, name) { if (e.className !== name) e.className = name; }

/** Puts a row's text into an element (as text: the strings are the capture's). */
function fillRow(e, row) {
  const values = row.kind === "g" ? [
    [""], [""], [row.folded ? "▸" : "▾", row.folded ? "Unfold" : "Fold"],
    [`${row.domain} — ${row.count} ${row.count === 1 ? "row" : "rows"}, ${fmtBytes(row.bytes)}${row.folded ? " (folded)" : ""}`, row.domain],
    [""], [""], [""], [""], [""], [""], [""], [""], [""],
  ] : row.kind === "t" ? [
    [fmtClock(row.ts)], [clientText(row), endpoint(row.client, row.clientPort) + (row.device ? " — device " + deviceLabel(row.device) : "")], [row.method], [row.url, row.url],
    [String(row.status || "—"), row.reason, statusClass(row.status)], [row.protocol], [row.type, row.mime],
    [fmtBytes(row.size)], [fmtMs(row.time), phasesText(row)], [row.avoidable ? "AVOIDABLE" : row.cache, "", row.avoidable ? "avoidable" : ""],
    [row.flags.join(" "), row.flags.join("\n")], [row.conn], [row.server],
  ] : row.kind === "e" ? [
    [fmtClock(row.ts)], [clientText(row), row.device ? "device " + deviceLabel(row.device) : ""], ["≈", "Estimated from record sizes and times, without keys"],
    [`${row.url} — ${row.protocol} ${row.word} ${row.index} of ${row.exact ? "" : "≥"}${row.of}${row.alone ? "" : " (sent with others: no response figures)"}`,
     "No method, status or path without keys: sizes and times from the TLS records (or QUIC packets)"],
    ["—"], [row.protocol + " ≈"], [""], [fmtBytes(row.size)], [fmtMs(row.time), phasesText(row)], [""], ["inferred"], [row.conn], [row.server],
  ] : [
    [fmtClock(row.ts)], [clientText(row), row.device ? "device " + deviceLabel(row.device) : ""], [row.transport === "quic" ? "QUIC" : "TLS"],
    [`${row.sni || row.server} — encrypted (${row.version}${row.alpn ? ", " + row.alpn : ""}) ${row.server}${row.open ? " — open" : ""}${estimateText(row.inferred)}`,
     "No keys for this connection: --keylog FILE decrypts it"],
    [""], [row.protocol], [""], [fmtBytes(row.bytes)], [fmtMs(row.time)], [""], [row.flags.join(" ")], [row.id], [row.server],
  ];
  // Only what differs from the row the element showed before is written: an unchanged text
  // leaves its cell's layout and text shaping as they were (a dragged scroll bar refills every
  // drawn row each frame, and most columns repeat from row to row).
  e.dataset.seq = row.seq;
  e.id = "row" + String(row.seq).replace(/\W/g, "_");
  const cells = e.children;
  for (let j = 0; j < columnOrder.length; j++) {
    const i = columnOrder[j];
    const [text, title, extra] = values[i];
    const cell = cells[j];
    setClass(cell, COLUMNS[i].cls + (extra ? " " + extra : ""));
    const t = shown(text);
    if (cell.textContent !== t) cell.textContent = t;
    if (title) { const tt = shown(title); if (cell.title !== tt) cell.title = tt; } else if (cell.hasAttribute("title")) cell.removeAttribute("title");
  }
  e._row = row;
  e._version = rowVersion(row);
}
