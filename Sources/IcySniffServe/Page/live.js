// The run the page shows: its status, and its records as they come (pages of what is there,
// then the event stream).

import { askSearch, refreshHeaderTerms } from "./filters.js";
import { render } from "./list.js";
import { ingest, refreshDevices } from "./records.js";
import { state } from "./state.js";
import { $, api, showNotice, shown } from "./util.js";

// ---- Status, and the live stream -------------------------------------------------------------

let info = {};
export function updateStatus() {
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

let events = null;
/** Stops the run's stream (a HAR opened in the page takes its place). */
export function stopLive() {
  if (events) events.close();
}

/** Shows the run: what is there already, in pages, then its records as they come. */
export async function start() {
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
  // The first page is a screenful and some (drawn while the next are asked for), the rest 5,000.
  for (let limit = 300; ; limit = 5000) {
    const page = await (await fetch(api(`/api/records?after=${state.after}&limit=${limit}`))).json();
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
