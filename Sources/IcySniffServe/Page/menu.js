// The rows' context menu (a right click on a row, or the Menu key or Shift+F10 on the selected
// one): copy the request as DevTools' "Copy" menu does, and show or hide the row's domain.

import { copyText, curlOf, fetchOf, headersText, responseBodyText } from "./copy.js";
import { entryOf } from "./detail.js";
import { addQueryTerm } from "./filters.js";
import { state } from "./state.js";
import { $, el, showNotice } from "./util.js";

let returnFocus = null;   // what had the focus before the menu opened

/** The menu's items for a row: [label, action] (null: a separator). */
function itemsFor(row) {
  // As the domain: filter reads a row (its host, port included, else its SNI): a port taken off
  // here would make "Show only" show nothing for a host that has one.
  const domain = row.host || row.sni || "";
  const withEntry = (make, what) => () => entryOf(row).then(e => make(e)).then(text => copyText(text, what))
    .catch(err => showNotice(`Could not copy ${what}: ${err}`));
  const items = [];
  if (row.kind === "t") {
    items.push(["Copy as cURL", withEntry(curlOf, "the request as a curl command")],
      ["Copy as fetch", withEntry(fetchOf, "the request as a fetch call")],
      ["Copy URL", () => copyText(row.url, "the URL")],
      ["Copy request headers", withEntry(e => headersText(e, "request"), "the request headers")],
      ["Copy response headers", withEntry(e => headersText(e, "response"), "the response headers")]);
    if (state.offline || (state.bodies && row.bodies[1] >= 0)) items.push(["Copy response body", withEntry(e => responseBodyText(row, e), "the response body")]);
    items.push(["Copy as HAR", withEntry(e => JSON.stringify(e, null, 2), "the HAR entry")]);
  } else {
    items.push(["Copy server name", () => copyText(row.sni || "", "the server name (SNI)")],
      ["Copy server address", () => copyText(row.server || "", "the server address")]);
  }
  if (domain) items.push(null, [`Show only ${domain}`, () => addQueryTerm(`domain:${domain}`)], [`Hide ${domain}`, () => addQueryTerm(`-domain:${domain}`)]);
  return items;
}

/** Opens the menu for a row at a point of the window (clamped to it); its first item has the focus. */
export function openRowMenu(row, x, y) {
  if (!row || row.kind === "g") return;
  const menu = $("row-menu");
  returnFocus = document.activeElement;
  menu.replaceChildren(...itemsFor(row).map(item => item === null ? el("div", { class: "sep", role: "separator" })
    : el("button", { type: "button", role: "menuitem", tabindex: "-1", text: item[0], onclick: () => { closeRowMenu(); item[1](); } })));
  menu.hidden = false;
  const r = menu.getBoundingClientRect();
  menu.style.left = Math.max(0, Math.min(x, innerWidth - r.width - 4)) + "px";
  menu.style.top = Math.max(0, Math.min(y, innerHeight - r.height - 4)) + "px";
  menu.querySelector("[role=menuitem]").focus();
}

export function closeRowMenu() {
  const menu = $("row-menu");
  if (menu.hidden) return;
  menu.hidden = true;
  if (returnFocus && returnFocus.isConnected) returnFocus.focus();
}

/** The menu's keys: up and down (around), Home, End; Esc and Tab close it. */
export function setUpRowMenu() {
  const menu = $("row-menu");
  menu.addEventListener("keydown", ev => {
    const items = [...menu.querySelectorAll("[role=menuitem]")];
    const at = items.indexOf(document.activeElement);
    const to = { ArrowDown: (at + 1) % items.length, ArrowUp: (at - 1 + items.length) % items.length, Home: 0, End: items.length - 1 }[ev.key];
    if (to !== undefined) { ev.preventDefault(); items[to].focus(); }
    else if (ev.key === "Escape" || ev.key === "Tab") { ev.preventDefault(); ev.stopPropagation(); closeRowMenu(); }
  });
  document.addEventListener("pointerdown", ev => { if (!menu.hidden && !menu.contains(ev.target)) closeRowMenu(); });
  window.addEventListener("blur", closeRowMenu);
}
