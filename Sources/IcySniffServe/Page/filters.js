// The filters: the form, the page's address that keeps them, the search box's DevTools syntax,
// and which rows they let through.

import { scheduleRender } from "./list.js";
import { choices, deviceNames } from "./records.js";
import { state } from "./state.js";
import { $, api, el } from "./util.js";

// ---- Filters (kept in the page's address: #q=…&status=4) ---------------------------------------

export const filterFields = ["q", "client", "host", "status", "type", "protocol", "method", "cache", "flags"];

export function readFilters() {
  const f = {};
  for (const k of filterFields) f[k] = $("f-" + k).value.trim();
  f.encrypted = $("f-encrypted").checked;
  f.query = parseQuery(f.q);
  return f;
}

export function filtersToHash() {
  const f = readFilters();
  const p = new URLSearchParams();
  for (const k of filterFields) if (f[k]) p.set(k, f[k]);
  if (!f.encrypted) p.set("encrypted", "0");
  if (state.view !== "list") p.set("view", state.view);
  if (state.groupBy) p.set("group", "domain");
  const hash = p.toString();
  history.replaceState(null, "", location.pathname + location.search + (hash ? "#" + hash : ""));
}

export function filtersFromHash() {
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

/** A test that answers once per distinct value of `keyOf(row)` (a host, a method, a MIME type,
 *  a status: strings many rows share) and remembers it, so that a filter over a million rows tests
 *  a regular expression or lowers a string once per host, not once per row. A test lives for one
 *  pass over the rows (readFilters makes the filter anew), so a device named since is seen. */
function remembered(keyOf, holds) {
  const memo = new Map();
  return row => {
    const k = keyOf(row);
    let v = memo.get(k);
    if (v === undefined) {
      v = holds(row);
      if (memo.size < 100000) memo.set(k, v);
    }
    return v;
  };
}

/** The keys answered from one shared value of the row. */
const MEMO_KEYS = {
  method: row => row.method, "mime-type": row => row.mime || "", protocol: row => row.protocol || "", "status-code": row => row.status,
};

/** A regular expression tested on a row's host, else its server name (each remembered). */
function hostOrSNI(re) {
  const host = remembered(row => row.host || "", row => re.test(row.host || ""));
  const sni = remembered(row => row.sni || "", row => re.test(row.sni || ""));
  return row => host(row) || sni(row);
}

/** A device by its address or one of its names; else the client address (each remembered). */
function deviceOrClient(re) {
  const device = remembered(row => row.device || "", row => !!row.device
    && (re.test(row.device) || (deviceNames.get(row.device) || []).some(n => re.test(n))));
  const client = remembered(row => row.client || "", row => re.test(row.client || ""));
  return row => device(row) || client(row);
}

/** One term of the query as a test of a row (its negation included). */
function termTest(t) {
  const key = MEMO_KEYS[t.key];
  const holds = t.key === "domain" ? hostOrSNI(t.re) : t.key === "device" ? deviceOrClient(t.re)
    : key ? remembered(key, row => answer(row, t)) : row => answer(row, t);
  const onlyTransactions = TRANSACTION_KEYS.has(t.key);
  return row => (onlyTransactions && row.kind !== "t" ? false : holds(row)) !== t.negate;
}

/** Text as a regular expression that finds it anywhere, case ignored. */
function containing(text) { return new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i"); }

/** The filter as the tests of what is set, made once per pass over the rows: a row is tested
 *  only by the filters in use, each in its cheapest form. */
function testsOf(f) {
  const tests = [];
  if (f.client) tests.push(row => (row.device || row.client) === f.client);
  if (f.host) tests.push(hostOrSNI(containing(f.host)));
  if (f.status) tests.push(remembered(row => row.status, row => String(row.status === 0 ? 0 : Math.floor(row.status / 100)) === f.status));
  if (f.type) tests.push(row => row.type === f.type);
  if (f.protocol) tests.push(row => row.protocol === f.protocol);
  if (f.method) tests.push(row => row.method === f.method);
  if (f.cache === "avoidable") tests.push(row => row.avoidable);
  else if (f.cache) tests.push(remembered(row => row.cache || "", row => (row.cache || "").startsWith(f.cache)));
  if (f.flags === "any") tests.push(row => row.flags.length > 0);
  else if (f.flags === "none") tests.push(row => row.flags.length === 0);
  else if (f.flags) tests.push(row => row.flags.includes(f.flags));
  if (f.q) {
    const query = f.query || parseQuery(f.q);
    for (const t of query.terms) tests.push(termTest(t));
    if (query.text) {
      const re = containing(query.text), names = hostOrSNI(re);
      tests.push(row => re.test(row.url || "") || names(row) || !!(state.searchSeqs && state.searchSeqs.has(row.seq)));
    }
  }
  return tests;
}

/** A term's answer for a row (domain and device are tested in termTest, a part at a time). */
function answer(row, t) {
  const transaction = row.kind === "t";
  switch (t.key) {
    case "status-code": return String(row.status) === t.value;
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
export function refreshHeaderTerms() {
  if (headerTermsLater) return;
  const query = parseQuery($("f-q").value.trim());
  if (!query.terms.some(t => t.key === "has-response-header" || t.key === "has-request-header")) return;
  headerTermsLater = setTimeout(() => { headerTermsLater = null; askHeaderTerms(parseQuery($("f-q").value.trim())); }, 1000);
}

/** Completion for the search box: the keys, and for a key the values this run has shown
 *  (status codes, domains, methods, MIME and resource types, protocols, device names), each
 *  offered as the whole text so far with the last word completed. */
export function suggestQuery() {
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
    const seen = { "status-code": choices.status, domain: choices.domain, method: choices.method, "mime-type": choices.mime,
      "resource-type": choices.type, protocol: choices.protocol, scheme: choices.scheme }[key];
    if (seen) for (const v of seen) values.add(v);
    if (key === "device") for (const [mac, names] of deviceNames) { values.add(names[0] || mac); }
    options = [...values].filter(v => v.toLowerCase().startsWith(part)).sort().slice(0, 50).map(v => key + ":" + v);
  }
  list.replaceChildren(...options.slice(0, 50).map(o => el("option", { value: (before ? before + " " : "") + neg + o })));
}

export function matches(row, f) {
  if (row.kind === "c" || row.kind === "e") {
    // An encrypted connection without keys, and the exchanges its records show: rows of their own
    // (a decrypted connection shows as its transactions). They have no status, type, method or cache.
    const id = row.kind === "c" ? row.id : row.conn;
    if (!f.encrypted || !row.encrypted || row.decrypted || state.connectionsWithTransactions.has(id)) return false;
    if (f.status || f.type || f.method || f.cache) return false;
  }
  const tests = f.tests || (f.tests = testsOf(f));
  for (let i = 0; i < tests.length; i++) if (!tests[i](row)) return false;
  return true;
}

let searchTimer = null, searchAsked = "";
export function askSearch() {
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

/** Adds a term to the search box (the rows' menu: "Show only", "Hide"), and applies it. */
export function addQueryTerm(term) {
  const q = $("f-q");
  q.value = (q.value.trim() + " " + term).trim();
  onFilterChange();
}

export function onFilterChange() {
  state.refilter = true;
  filtersToHash();
  clearTimeout(searchTimer);
  searchTimer = setTimeout(askSearch, 250);
  scheduleRender();
}
