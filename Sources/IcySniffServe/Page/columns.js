// The list's columns: which it shows, in what order, how wide (kept in this browser across
// reloads), and the sort a click on a header sets. The list draws its cells in `columnOrder`.

import { state } from "./state.js";
import { $, el } from "./util.js";

/** Every column in its default order: class, header name, sort key; the first `true` marks the
 *  columns always shown (time and URL), the second those hidden until chosen. */
export const COLUMNS = [
  ["c-time", "Time", "ts", true], ["c-client", "Client", "client"], ["c-method", "Method", "method"],
  ["c-url", "URL", "url", true], ["c-status", "Status", "status"], ["c-proto", "Protocol", "protocol"],
  ["c-type", "Type", "type"], ["c-size", "Size", "size"], ["c-dur", "Duration", "time"], ["c-cache", "Cache", "cache"],
  ["c-flags", "Flags", "flags"], ["c-conn", "Connection", "conn", false, true], ["c-server", "Server", "server", false, true],
];
const NAMES = COLUMNS.map(c => c[0]);
const COLUMN_STORE = "icy-sniff.columns";

/** What the user chose: hidden columns, widths, the order (column classes). Columns a stored
 *  choice does not know (added since) take their defaults. */
function loadColumnPrefs() {
  let p = null;
  try { p = JSON.parse(localStorage.getItem(COLUMN_STORE) || "null"); } catch (_) { p = null; }
  const hideable = new Set(COLUMNS.filter(c => !c[3]).map(c => c[0]));
  const known = new Set(Array.isArray(p && p.known) ? p.known : NAMES.slice(0, 11));
  const hidden = Array.isArray(p && p.hidden) ? p.hidden.filter(c => hideable.has(c)) : [];
  for (const c of COLUMNS) if (c[4] && !known.has(c[0]) && !hidden.includes(c[0])) hidden.push(c[0]);
  const widths = {};
  for (const [c, w] of Object.entries((p && p.widths) || {})) if (NAMES.includes(c) && c !== "c-url" && Number.isFinite(w)) widths[c] = Math.min(600, Math.max(32, w));
  const order = Array.isArray(p && p.order) ? p.order.filter((c, i, all) => NAMES.includes(c) && all.indexOf(c) === i) : [];
  for (const c of NAMES) if (!order.includes(c)) order.push(c);
  return { hidden, widths, order, known: NAMES.slice() };
}
const columnPrefs = loadColumnPrefs();

function saveColumnPrefs() {
  try { localStorage.setItem(COLUMN_STORE, JSON.stringify(columnPrefs)); } catch (_) { /* storage refused: this page only */ }
}

/** The columns in the order the list draws them, as indexes into COLUMNS. */
export let columnOrder = columnPrefs.order.map(c => NAMES.indexOf(c));

/** Called when the order changes: the list makes its row elements again. */
let orderChanged = () => {};

/** The preferences on the page: hidden columns as classes of <main>, widths as its CSS
 *  variables, the header's cells in the chosen order. */
export function applyColumns() {
  const main = $("main");
  for (const c of NAMES) main.classList.toggle("hide-" + c, columnPrefs.hidden.includes(c));
  for (const [c, w] of Object.entries(columnPrefs.widths)) main.style.setProperty("--w-" + c, w + "px");
  const head = $("list-head");
  head.append(...columnOrder.map(i => head.querySelector("." + COLUMNS[i][0])));
  head.querySelectorAll("[role=columnheader]").forEach((h, i) => h.setAttribute("aria-colindex", String(i + 1)));
}

/** Puts a column at `at` among the others (0: first). */
function placeColumn(c, at) {
  const order = columnPrefs.order.filter(o => o !== c);
  order.splice(Math.min(order.length, Math.max(0, at)), 0, c);
  if (order.join() === columnPrefs.order.join()) return;
  columnPrefs.order = order;
  columnOrder = order.map(o => NAMES.indexOf(o));
  saveColumnPrefs();
  applyColumns();
  orderChanged();
}

/** The Columns menu: a line per column (shown or not; moved left or right), and the defaults. */
export function buildColumnsMenu() {
  const menu = $("columns-menu");
  const byName = new Map(COLUMNS.map(c => [c[0], c]));
  menu.replaceChildren(...columnPrefs.order.map(c => {
    const [, name, , always] = byName.get(c);
    const box = el("input", { type: "checkbox", id: "col-" + c, disabled: always, title: always ? "Always shown" : null });
    box.checked = !columnPrefs.hidden.includes(c);
    box.addEventListener("change", () => {
      columnPrefs.hidden = columnPrefs.hidden.filter(h => h !== c);
      if (!box.checked) columnPrefs.hidden.push(c);
      saveColumnPrefs();
      applyColumns();
    });
    const move = (by, symbol, where) => el("button", { type: "button", class: "move", text: symbol, "aria-label": `Move ${name} ${where}`, title: `Move ${name} ${where}`,
      onclick: () => { placeColumn(c, columnPrefs.order.indexOf(c) + by); buildColumnsMenu(); $(`move-${c}-${by}`)?.focus(); }, id: `move-${c}-${by}` });
    return el("div", { class: "menu-line" }, el("label", { class: "check" }, box, document.createTextNode(" " + name)),
      move(-1, "◂", "left"), move(1, "▸", "right"));
  }), (() => {
    const reset = el("button", { type: "button", text: "Default columns" });
    reset.addEventListener("click", () => {
      for (const c of Object.keys(columnPrefs.widths)) $("main").style.removeProperty("--w-" + c);
      Object.assign(columnPrefs, { hidden: COLUMNS.filter(c => c[4]).map(c => c[0]), widths: {}, order: NAMES.slice() });
      columnOrder = NAMES.map((_, i) => i);
      saveColumnPrefs();
      applyColumns();
      orderChanged();
      buildColumnsMenu();
    });
    return reset;
  })());
}

export function showColumnsMenu(open) {
  $("columns-menu").hidden = !open;
  $("columns-button").setAttribute("aria-expanded", String(open));
  if (open) { const first = $("columns-menu").querySelector("input:not([disabled])"); if (first) first.focus(); }
}

/** The header's cells: a click sorts (ascending, descending, none; aria-sort says which), a drag
 *  moves the column, a drag of the grip at the right edge sets its width. */
export function setUpHeader(onOrderChange, onSort) {
  orderChanged = onOrderChange;
  for (const h of document.querySelectorAll("#list-head > span")) {
    const c = [...h.classList].find(k => k.startsWith("c-"));
    let dragged = false;
    h.addEventListener("click", () => {
      if (dragged) { dragged = false; return; }   // the end of a move, not a sort
      const key = h.dataset.sort;
      if (state.sort.key === key) {
        if (state.sort.dir === 1) state.sort.dir = -1; else state.sort = { key: null, dir: 1 };
      } else state.sort = { key, dir: 1 };
      for (const o of document.querySelectorAll("#list-head [data-sort]")) {
        o.classList.remove("sorted-asc", "sorted-desc");
        o.removeAttribute("aria-sort");
      }
      if (state.sort.key) {
        h.classList.add(state.sort.dir === 1 ? "sorted-asc" : "sorted-desc");
        h.setAttribute("aria-sort", state.sort.dir === 1 ? "ascending" : "descending");
      }
      onSort();
    });
    // Moving: a press on the header, dragged past 8 pixels; let go over another header.
    h.addEventListener("pointerdown", ev => {
      if (ev.button !== 0) return;
      const startX = ev.clientX;
      h.setPointerCapture(ev.pointerId);
      const move = e => { if (Math.abs(e.clientX - startX) > 8) { dragged = true; h.classList.add("moving"); } };
      const up = e => {
        h.removeEventListener("pointermove", move);
        h.removeEventListener("pointerup", up);
        h.classList.remove("moving");
        if (!dragged) return;
        const over = [...document.querySelectorAll("#list-head > span")].find(o => {
          const r = o.getBoundingClientRect();
          return o !== h && r.width > 0 && e.clientX >= r.left && e.clientX < r.right;
        });
        if (!over) return;
        const target = [...over.classList].find(k => k.startsWith("c-"));
        const r = over.getBoundingClientRect();
        const after = e.clientX > r.left + r.width / 2;
        placeColumn(c, columnPrefs.order.filter(o => o !== c).indexOf(target) + (after ? 1 : 0));
        buildColumnsMenu();
      };
      h.addEventListener("pointermove", move);
      h.addEventListener("pointerup", up);
    });
    if (c === "c-url") continue;
    const grip = el("span", { class: "grip", "aria-hidden": "true" });
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
