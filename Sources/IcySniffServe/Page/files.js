// Files: the shown transactions exported as HAR or NDJSON, and a HAR opened in the page.

import { showDetail } from "./detail.js";
import { applyFilter, forgetDrawnRows, render } from "./list.js";
import { stopLive } from "./live.js";
import { choices, fillChoices, nameDevices, noteChoice, rowFromEntry } from "./records.js";
import { state } from "./state.js";
import { $, api, el, showNotice } from "./util.js";

// ---- Exports and opening a HAR ---------------------------------------------------------------

export function download(name, blob) {
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

export function exportShown(format) {
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

export function openHAR(file) {
  const reader = new FileReader();
  reader.onload = () => {
    let har;
    try { har = JSON.parse(reader.result); } catch (err) { showNotice(`${file.name} is not JSON: ${err.message}`); return; }
    if (!har || !har.log || !Array.isArray(har.log.entries)) { showNotice(`${file.name} is not a HAR (no log.entries)`); return; }
    stopLive();
    state.offline = { name: file.name, entries: har.log.entries, har };
    forgetDrawnRows();
    state.rows = []; state.fresh = []; state.refilter = true; state.transactions = har.log.entries.length; state.bySeq.clear(); state.connections.clear(); state.pages.clear(); state.selected = null;
    for (const k of Object.keys(choices)) choices[k].clear();
    // icy-sniff's HAR names its devices (log._devices); a browser's has none.
    nameDevices(har.log._devices || []);
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
