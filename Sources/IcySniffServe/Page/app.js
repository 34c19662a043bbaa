// icy-sniff's web view (--serve). Plain JavaScript modules, no dependencies, nothing from the
// network but this page's own server (docs/WEBVIEW.md describes its API and the modules).
//
// Everything the page shows comes from captured traffic and may have been shaped by an attacker:
// it is put into the page as text (textContent, DOM nodes), never as markup.
//
// This module wires the page's controls to the parts: util, state, records, filters, columns,
// list, menu, detail, copy, waterfall, files and live.

import { select, showDetail } from "./detail.js";
import { exportShown, openHAR } from "./files.js";
import { filterFields, filtersFromHash, filtersToHash, onFilterChange, suggestQuery } from "./filters.js";
import { applyColumns, buildColumnsMenu, setUpHeader, showColumnsMenu } from "./columns.js";
import { drawRows, remakeRowElements, scheduleRender } from "./list.js";
import { start } from "./live.js";
import { openRowMenu, setUpRowMenu } from "./menu.js";
import { state } from "./state.js";
import { $, ROW_HEIGHT } from "./util.js";
import { drawWaterfall, zoom } from "./waterfall.js";

function setView(view) {
  state.view = view;
  $("list-view").hidden = view !== "list";
  $("waterfall-view").hidden = view !== "waterfall";
  $("view-list").classList.toggle("active", view === "list");
  $("view-waterfall").classList.toggle("active", view === "waterfall");
  $("view-list").setAttribute("aria-selected", String(view === "list"));
  $("view-waterfall").setAttribute("aria-selected", String(view === "waterfall"));
  filtersToHash();
  scheduleRender();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const k of filterFields) $("f-" + k).addEventListener("input", onFilterChange);
  $("f-q").addEventListener("input", suggestQuery);
  $("f-q").addEventListener("focus", suggestQuery);
  $("f-encrypted").addEventListener("change", onFilterChange);
  $("f-group").addEventListener("change", () => { state.groupBy = $("f-group").checked; onFilterChange(); });
  $("filters").addEventListener("submit", ev => ev.preventDefault());
  $("f-clear").addEventListener("click", () => {
    state.refilter = true;
    for (const k of filterFields) $("f-" + k).value = "";
    $("f-encrypted").checked = true;
    onFilterChange();
  });
  $("list").addEventListener("scroll", () => drawRows(), { passive: true });
  $("list").addEventListener("click", ev => {
    const e = ev.target.closest(".row");
    if (e && e._row) select(e._row);
  });
  // The list's keys, as DevTools' network panel has them: up and down, a page, the first and the
  // last row move the selection (and the detail pane with it); Enter opens the selected row.
  $("list").addEventListener("keydown", ev => {
    const list = $("list");
    const page = Math.max(1, Math.floor(list.clientHeight / ROW_HEIGHT) - 1);
    const rows = state.listed;
    const at = rows.indexOf(state.selected);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, PageDown: at + page, PageUp: at - page, Home: 0, End: rows.length - 1,
                    Enter: at };
    if (!(ev.key in moves) || rows.length === 0) return;
    ev.preventDefault();
    let i = Math.min(rows.length - 1, Math.max(0, at < 0 && ev.key !== "End" ? 0 : moves[ev.key]));
    // The arrows step over the domains' lines (a click folds them); Enter on none.
    const step = ev.key === "ArrowUp" || ev.key === "PageUp" || ev.key === "End" ? -1 : 1;
    while (rows[i] && rows[i].kind === "g" && rows[i + step]) i += step;
    if (!rows[i] || rows[i].kind === "g") return;
    select(rows[i]);
    // Row i lies below the header row, which stays at the top.
    const top = (i + 1) * ROW_HEIGHT;
    if (top - ROW_HEIGHT < list.scrollTop) list.scrollTop = top - ROW_HEIGHT;
    else if (top + ROW_HEIGHT > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW_HEIGHT - list.clientHeight;
  });
  // The rows' context menu: a right click on a row; the Menu key or Shift+F10 on the selected one.
  setUpRowMenu();
  $("list").addEventListener("contextmenu", ev => {
    const e = ev.target.closest(".row");
    if (!e || !e._row || e._row.kind === "g") return;
    ev.preventDefault();
    openRowMenu(e._row, ev.clientX, ev.clientY);
  });
  $("list").addEventListener("keydown", ev => {
    if (!(ev.key === "ContextMenu" || (ev.key === "F10" && ev.shiftKey)) || !state.selected) return;
    ev.preventDefault();
    const drawnRow = $("list").querySelector(`.row[data-seq="${state.selected.seq}"]:not([hidden])`);
    const r = (drawnRow || $("list")).getBoundingClientRect();
    openRowMenu(state.selected, r.left + 40, r.top + (drawnRow ? r.height : 0));
  });
  // Anywhere: Esc closes the detail pane (back to the list); "/" and Ctrl+F go to the search.
  document.addEventListener("keydown", ev => {
    const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.target instanceof HTMLTextAreaElement;
    if (ev.key === "Escape" && !$("detail").hidden) {
      showDetail(false);
      state.selected = null;
      drawRows();
      $("list").focus();
    } else if ((ev.key === "/" && !typing) || (ev.key === "f" && (ev.ctrlKey || ev.metaKey))) {
      ev.preventDefault();
      $("f-q").focus();
      $("f-q").select();
    }
  });
  setUpHeader(remakeRowElements, () => { state.refilter = true; scheduleRender(); });
  applyColumns();
  buildColumnsMenu();
  $("columns-button").addEventListener("click", () => showColumnsMenu($("columns-menu").hidden));
  document.addEventListener("click", ev => {
    // The path as dispatched: a click on a menu button the menu has since made again is inside it.
    if (!$("columns-menu").hidden && !ev.composedPath().some(n => n.classList && n.classList.contains("menu-anchor"))) showColumnsMenu(false);
  });
  $("columns-menu").addEventListener("keydown", ev => {
    if (ev.key === "Escape") { ev.stopPropagation(); showColumnsMenu(false); $("columns-button").focus(); }
  });
  $("d-close").addEventListener("click", () => { showDetail(false); state.selected = null; drawRows(); });
  $("view-list").addEventListener("click", () => setView("list"));
  $("view-waterfall").addEventListener("click", () => setView("waterfall"));
  $("wf-group").addEventListener("change", () => { $("wf-which").value = ""; state.wfScale = null; drawWaterfall(); });
  $("wf-which").addEventListener("change", () => { state.wfScale = null; drawWaterfall(); });
  $("wf-in").addEventListener("click", () => zoom(1.5));
  $("wf-out").addEventListener("click", () => zoom(1 / 1.5));
  $("wf-fit").addEventListener("click", () => { state.wfScale = null; drawWaterfall(); });
  $("wf").addEventListener("wheel", ev => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    zoom(ev.deltaY < 0 ? 1.25 : 0.8);
  }, { passive: false });
  $("export-har").addEventListener("click", () => exportShown("har"));
  $("export-ndjson").addEventListener("click", () => exportShown("ndjson"));
  $("open-har").addEventListener("change", ev => { if (ev.target.files[0]) openHAR(ev.target.files[0]); });
  window.addEventListener("resize", scheduleRender);
  // An address with another filter (pasted, back and forward): that filter.
  window.addEventListener("hashchange", () => {
    filtersFromHash();
    setView(state.view);
  });
  filtersFromHash();
  setView(state.view);
  start();
});
