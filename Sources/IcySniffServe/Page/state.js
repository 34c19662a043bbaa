// The page's one state: the rows it has, what the filter shows, what is selected.

export const state = {
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
  shownTransactions: 0, // and the encrypted connections and estimated exchanges shown
  shownConnections: 0,
  shownEstimates: 0,
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

// The state as the browser's console (and scripts/webview-check, which drives the page in
// Chromium) reads it: `state.shown`, `state.selected`. The page itself never reads it from here.
window.state = state;
