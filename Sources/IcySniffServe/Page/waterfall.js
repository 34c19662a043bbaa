// The waterfall: a page's or a connection's requests on one time axis, phase by phase.

import { select } from "./detail.js";
import { statusClass } from "./list.js";
import { state } from "./state.js";
import { $, el, fmtMs } from "./util.js";

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

export function drawWaterfall() {
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

export function zoom(factor) {
  // From the scale last drawn (the fitted one until the first zoom).
  state.wfScale = (state.wfScale || state.wfScaleDrawn || 1) * factor;
  drawWaterfall();
}
