// The tree view: a role="tree" of RowViews reconciled by key (rows keep their DOM node across updates),
// with a roving tab stop and the WAI-ARIA tree keyboard model.
//
// Collapse defaults (documented choice): phase rows start expanded so the whole build structure is visible;
// group rows ("name ×count", runs of >= GROUP_MIN same-name siblings such as the ~1,100 "Measuring tactic
// time" instances) start collapsed.  A user's choice is remembered per phase id / group key for the
// lifetime of the model (shared by all views of it), so it survives every phase update.

import { h } from "./dom.js";
import { RowView } from "./rows.js";

/** @typedef {import("./rows.js").RowContext} RowContext */
/** @typedef {import("./structure.js").Item} Item */
/** @typedef {import("./structure.js").Structure} Structure */

/**
 * What the tree renders: the current structure and the context of its rows.
 * @typedef {object} TreeHost
 * @property {Structure} struct
 * @property {() => RowContext} rowContext
 */

export class TreeView {
  /**
   * @param {Map<string, boolean>} expanded the user's collapse choices: key -> expanded
   * @param {TreeHost} host
   */
  constructor(expanded, host) {
    this.el = h("div", "trtw-tree", { role: "tree", "aria-label": "TensorRT build phases" });
    // Column headings for sighted readers (each row's cells carry their own labels for assistive tech).
    this.head = h("div", "trtw-colhead", { "aria-hidden": "true" });
    this.deltaHead = h("span", "trtw-colhead-delta", { title: "Change against the last matching build" });
    /** @type {[string, string][]} */
    const cols = [
      ["Phase", ""],
      ["", ""],
      ["Progress", "Steps done of the steps TensorRT announced"],
      ["Steps", "Steps done / announced"],
      ["%", ""],
      ["Time", "Wall time of the phase (summed over a group's instances)"],
    ];
    for (const [i, [text, tip]] of cols.entries()) {
      const cell = i === 1 ? this.deltaHead : h("span", "", tip ? { title: tip } : {});
      if (text) cell.textContent = text;
      this.head.append(cell);
    }
    this.expanded = expanded;
    this.host = host;
    /** key -> RowView (also detached ones of collapsed subtrees) @type {Map<string, RowView>} */
    this.rows = new Map();
    /** @type {WeakMap<Element, RowView>} */
    this.rowByEl = new WeakMap();
    /** RowViews currently in the tree, in order @type {RowView[]} */
    this.visible = [];
    /** visible rows whose time is live @type {RowView[]} */
    this.liveRows = [];
    /** the row with tabindex 0 @type {string | null} */
    this.tabKey = null;
  }

  /**
   * @param {string} key
   * @param {boolean} dflt
   */
  isExpanded(key, dflt) {
    const v = this.expanded.get(key);
    return v === undefined ? dflt : v;
  }

  /** Render the host's structure: update every visible row, then fix the DOM order with few moves. */
  reconcile() {
    const ctx = this.host.rowContext();
    const deltaText = ctx.hd ? "\u0394 last build" : "";
    if (this.deltaHead.textContent !== deltaText) this.deltaHead.textContent = deltaText;
    const struct = this.host.struct;
    /** @type {RowView[]} */
    const desired = [];
    /** @type {RowView[]} */
    const liveRows = [];
    /**
     * @param {Item[]} items
     * @param {number} level
     * @param {string | null} parentKey
     */
    const visit = (items, level, parentKey) => {
      for (const it of items) {
        const isGroup = it.kind === "group";
        const expandable = !!it.items?.length;
        const expanded = expandable && this.isExpanded(it.key, !isGroup);
        let rv = this.rows.get(it.key);
        if (!rv) {
          rv = new RowView(it.key);
          this.rows.set(it.key, rv);
          this.rowByEl.set(rv.el, rv);
        }
        rv.update({ item: it, level, parentKey, expandable, expanded }, ctx);
        if (rv.live) liveRows.push(rv);
        desired.push(rv);
        if (expanded && it.items) visit(it.items, level + 1, it.key);
      }
    };
    visit(struct.items, 1, null);
    this.liveRows = liveRows;

    // 1. detach rows that are no longer visible; forget rows that vanished
    const want = new Set(desired);
    for (const rv of this.visible) if (!want.has(rv)) rv.el.remove();
    if (this.rows.size > desired.length) {
      for (const [key, rv] of this.rows) {
        if (!struct.byKey.has(key) && !struct.groups.has(key)) {
          rv.el.remove();
          this.rows.delete(key);
        }
      }
    }
    // 2. order: walk the container, inserting only rows that are out of place
    const parent = this.el;
    let ref = parent.firstChild;
    for (const rv of desired) {
      if (rv.el === ref) ref = ref.nextSibling;
      else parent.insertBefore(rv.el, ref);
    }
    while (ref) {
      const next = ref.nextSibling;
      ref.remove();
      ref = next;
    }
    this.visible = desired;
    // 3. roving tabindex
    const tabRow = this.tabKey === null ? undefined : this.rows.get(this.tabKey);
    if (!tabRow || !want.has(tabRow)) this.setTabStop(desired.length ? desired[0].key : null);
  }

  /** @param {string | null} key */
  setTabStop(key) {
    if (this.tabKey === key) {
      const rv = key === null ? null : this.rows.get(key);
      if (rv && rv.el.tabIndex !== 0) rv.setTabStop(true);
      return;
    }
    const old = this.tabKey === null ? null : this.rows.get(this.tabKey);
    if (old) old.setTabStop(false);
    this.tabKey = key;
    const rv = key === null ? null : this.rows.get(key);
    if (rv) rv.setTabStop(true);
  }

  /**
   * @param {Event} e
   * @returns {RowView | null}
   */
  rowFromEvent(e) {
    const t = /** @type {Element | null} */ (e.target);
    const rowEl = t && typeof t.closest === "function" ? t.closest(".trtw-row") : null;
    return rowEl ? this.rowByEl.get(rowEl) || null : null;
  }

  /**
   * Expand or collapse a row (toggle if `expand` is undefined) and remember the choice.
   * @param {string} key
   * @param {boolean} [expand]
   */
  toggle(key, expand) {
    const rv = this.rows.get(key);
    if (!rv?.expandable) return;
    const next = expand === undefined ? !rv.expanded : expand;
    if (next === rv.expanded) return;
    this.expanded.set(key, next);
    const hadFocus = typeof document !== "undefined" && document.activeElement === rv.el;
    this.reconcile();
    if (hadFocus && document.activeElement !== rv.el) rv.el.focus();
  }

  /** @param {Element | null} el */
  focusRow(el) {
    if (!el) return;
    const rv = this.rowByEl.get(el);
    if (!rv) return;
    this.setTabStop(rv.key);
    rv.el.focus();
  }

  /** @param {Event} e */
  onFocusIn(e) {
    const rv = this.rowFromEvent(e);
    if (rv) this.setTabStop(rv.key);
  }

  /** @param {MouseEvent} e */
  onClick(e) {
    const rv = this.rowFromEvent(e);
    if (!rv) return;
    this.setTabStop(rv.key);
    const t = /** @type {Node | null} */ (e.target);
    if (rv.expandable && rv.label.contains(t)) this.toggle(rv.key); // the whole name cell is the target
    if (typeof document !== "undefined" && document.activeElement !== rv.el) rv.el.focus({ preventScroll: true });
  }

  /** @param {KeyboardEvent} e */
  onKey(e) {
    const rv = this.rowFromEvent(e);
    if (!rv) return;
    const el = rv.el;
    let handled = true;
    switch (e.key) {
      case "Enter":
      case " ":
      case "Spacebar":
        if (rv.expandable) this.toggle(rv.key);
        break;
      case "ArrowRight":
        if (rv.expandable && !rv.expanded) this.toggle(rv.key, true);
        else if (rv.expandable) this.focusRow(el.nextElementSibling);
        break;
      case "ArrowLeft":
        if (rv.expandable && rv.expanded) this.toggle(rv.key, false);
        else if (rv.parentKey !== null) {
          const p = this.rows.get(rv.parentKey);
          if (p) this.focusRow(p.el);
        }
        break;
      case "ArrowDown":
        this.focusRow(el.nextElementSibling);
        break;
      case "ArrowUp":
        this.focusRow(el.previousElementSibling);
        break;
      case "Home":
        this.focusRow(this.el.firstElementChild);
        break;
      case "End":
        this.focusRow(this.el.lastElementChild);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }
}
