// The list's columns: which it shows, in what order, how wide (kept in this browser across
// reloads), and the sort a click on a header sets. The list draws its cells in `columnOrder`.

import { state } from "./state.js";
import { $, el } from "./util.js";

/** Every column in its default order, the one place that names them: its class (`cls`, with
 *  `num` for right-aligned figures), header name, the row field it sorts by; `always` shown (time
 *  and URL), or `optIn`: hidden until chosen. The header is made from it, and the list's rows. */
export const COLUMNS = [
  { cls: "c-time", name: "Time", sort: "ts", always: true }, { cls: "c-client", name: "Client", sort: "client" },
  { cls: "c-method", name: "Method", sort: "method" }, { cls: "c-url", name: "URL", sort: "url", always: true },
  { cls: "c-status", name: "Status", sort: "status" }, { cls: "c-proto", name: "Protocol", sort: "protocol" },
  { cls: "c-type", name: "Type", sort: "type" }, { cls: "c-size num", name: "Size", sort: "size" },
  { cls: "c-dur num", name: "Duration", sort: "time" }, { cls: "c-cache", name: "Cache", sort: "cache" },
  { cls: "c-flags", name: "Flags", sort: "flags" }, { cls: "c-conn", name: "Connection", sort: "conn", optIn: true },
  { cls: "c-server", name: "Server", sort: "server", optIn: true },
];
/** A column's own class (`c-size`), which the preferences and the CSS variables use. */
const NAMES = COLUMNS.map(c => c.cls.split(" ")[0]);
const COLUMN_STORE = "icy-sniff.columns";

/** A width the user dragged to, within what the list can show. */
function clampWidth(w) { return Math.round(Math.min(600, Math.max(32, w))); }

/** What the user chose: hidden columns, widths, the order (column classes). Columns a stored
 *  choice does not know (added since) take their defaults. */
function loadColumnPrefs() {
  let p = null;
  try { p = JSON.parse(localStorage.getItem(COLUMN_STORE) || "null"); } catch (_) { p = null; }
  const hideable = new Set(NAMES.filter((_, i) => !COLUMNS[i].always));
  // A choice stored before the opt-in columns existed knows none of them.
  const known = new Set(Array.isArray(p && p.known) ? p.known : NAMES.filter((_, i) => !COLUMNS[i].optIn));
  const hidden = Array.isArray(p && p.hidden) ? p.hidden.filter(c => hideable.has(c)) : [];
  NAMES.forEach((c, i) => { if (COLUMNS[i].optIn && !known.has(c) && !hidden.includes(c)) hidden.push(c); });
  const widths = {};
  for (const [c, w] of Object.entries((p && p.widths) || {})) if (NAMES.includes(c) && c !== "c-url" && Number.isFinite(w)) widths[c] = clampWidth(w);
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
  head.append(...columnOrder.map(i => head.querySelector("." + NAMES[i])));
  head.querySelectorAll("[role=columnheader]").forEach((h, i) => h.setAttribute("aria-colindex", String(i + 1)));
}

/** The columns in a new order (column classes): kept, shown, and the rows made again. */
function setOrder(order) {
  columnPrefs.order = order;
  columnOrder = order.map(o => NAMES.indexOf(o));
  saveColumnPrefs();
  applyColumns();
  orderChanged();
}

/** Puts a column at `at` among the others (0: first). */
function placeColumn(c, at) {
  const order = columnPrefs.order.filter(o => o !== c);
  order.splice(Math.min(order.length, Math.max(0, at)), 0, c);
  if (order.join() !== columnPrefs.order.join()) setOrder(order);
}

/** The Columns menu: a line per column (shown or not; moved left or right), and the defaults. */
export function buildColumnsMenu() {
  const menu = $("columns-menu");
  menu.replaceChildren(...columnPrefs.order.map(c => {
    const { name, always } = COLUMNS[NAMES.indexOf(c)];
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
      Object.assign(columnPrefs, { hidden: NAMES.filter((_, i) => COLUMNS[i].optIn), widths: {} });
      setOrder(NAMES.slice());
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

/** The header's cells, made from COLUMNS: a click sorts (ascending, descending, none; aria-sort
 *  says which), a drag moves the column, a drag of the grip at the right edge sets its width. */
export function setUpHeader(onOrderChange, onSort) {
  orderChanged = onOrderChange;
  $("list-head").replaceChildren(...COLUMNS.map(c => el("span", { class: c.cls, "data-sort": c.sort, role: "columnheader", text: c.name })));
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
      dragged = false;   // a drag let go outside the header left it set, and would eat this click
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
        const w = clampWidth(startWidth + e.clientX - startX);
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
