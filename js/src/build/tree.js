// The tree view: a role="tree" of RowViews reconciled by key (rows keep their DOM node across updates),
// with a roving tab stop and the WAI-ARIA tree keyboard model.
//
// Collapse defaults (documented choice): phase rows start expanded so the whole build structure is visible;
// group rows ("name ×count", runs of >= GROUP_MIN same-name siblings such as the ~1,100 "Measuring tactic
// time" instances) start collapsed.  A user's choice is remembered per phase id / group key for the
// lifetime of the model (shared by all views of it), so it survives every phase update.

import { h } from "../shared/dom.js";
import { RowView } from "./rows.js";

// the history is the user's (one file per user, shared by every environment): a first build in a fresh venv
// can already have a past build to compare with, so the column says which one
const DELTA_TIP =
  "Change against the last build of this model with the same options and backend on this machine (the build " +
  "history is per user, shared by every environment)";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * The Δ column's heading: when the build it compares with was made ("Δ vs 15:30 build" today, "Δ vs 5 Dec
 * build" before), "Δ last build" where that is not known.
 * @param {number | null} at epoch seconds
 * @param {Date} [now]
 * @returns {string}
 */
export function deltaLabel(at, now = new Date()) {
  if (at === null) return "\u0394 last build";
  const d = new Date(at * 1000);
  const today = d.toDateString() === now.toDateString();
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
  const when = today ? `${pad(d.getHours())}:${pad(d.getMinutes())}` : `${d.getDate()} ${MONTHS[d.getMonth()]}`;
  return `\u0394 vs ${when} build`;
}

/** @typedef {import("./rows.js").RowContext} RowContext */
/** @typedef {import("./rows.js").RowData} RowData */

/** Above this many visible rows only those in view (and a margin) are in the DOM. */
export const VIRTUAL_MIN = 400;
const ROW_PX = 20; // .trtw-row height
const OVERSCAN = 20; // rows rendered beyond each edge of the view
const DEFAULT_VIEW_PX = 600; // the tree's max-height when it cannot be measured
const INLINE_RUNNING_MAX = 4; // running members a collapsed group shows inline
/** @typedef {import("./structure.js").Item} Item */
/** @typedef {import("./structure.js").Structure} Structure */

/**
 * What the tree renders: the current structure and the context of its rows.
 * @typedef {object} TreeHost
 * @property {Structure} struct
 * @property {() => RowContext} rowContext
 */

/**
 * The most characters any row's Steps cell can show: "done/total" for a phase, "N done" for a group, "done".
 * @param {Structure} struct
 * @returns {number}
 */
export function stepsChars(struct) {
  let most = 4; // "done"
  for (const node of struct.nodes) if (node.numSteps > 0) most = Math.max(most, 2 * String(node.numSteps).length + 1);
  for (const group of struct.groups.values()) most = Math.max(most, String(group.count).length + 5);
  return most;
}

export class TreeView {
  /**
   * @param {Map<string, boolean>} expanded the user's collapse choices: key -> expanded
   * @param {TreeHost} host
   */
  constructor(expanded, host) {
    this.el = h("div", "trtw-tree", { role: "tree", "aria-label": "TensorRT build phases" });
    // Column headings for sighted readers (each row's cells carry their own labels for assistive tech).
    this.head = h("div", "trtw-colhead", { "aria-hidden": "true" });
    this.deltaHead = h("span", "trtw-colhead-delta", { title: DELTA_TIP });
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
    /** every visible row, in order (only a window of them is in the DOM for long lists) @type {RowData[]} */
    this.flat = [];
    /** row key -> index in flat @type {Map<string, number>} */
    this.indexOf = new Map();
    /** the rendered range of flat @type {[number, number]} */
    this.window = [0, 0];
    /** @type {RowContext | null} */
    this.ctx = null;
    this.scrollFrame = false;
    this.topSpacer = h("div", "trtw-spacer", { "aria-hidden": "true" });
    this.bottomSpacer = h("div", "trtw-spacer", { "aria-hidden": "true" });
  }

  /**
   * @param {string} key
   * @param {boolean} dflt
   */
  isExpanded(key, dflt) {
    const v = this.expanded.get(key);
    return v === undefined ? dflt : v;
  }

  /** Render the host's structure: flatten the visible rows, then render them (or, for long lists, the window). */
  reconcile() {
    const ctx = this.host.rowContext();
    const deltaText = ctx.hd ? deltaLabel(ctx.basedAt ?? null) : "";
    if (this.deltaHead.textContent !== deltaText) this.deltaHead.textContent = deltaText;
    const deltaTip = ctx.basis ? `${DELTA_TIP}: ${ctx.basis}` : DELTA_TIP;
    if (this.deltaHead.title !== deltaTip) this.deltaHead.title = deltaTip;
    // the heading and the rows are two grids: with deltas, their column gets one width in both (CSS)
    const deltas = ctx.hd ? "on" : "off";
    if (this.el.dataset.deltas !== deltas) this.el.dataset.deltas = this.head.dataset.deltas = deltas;
    const struct = this.host.struct;
    // the Steps column is as wide as its longest count ("13502/13502"): numbers are never cut, names shorten
    const chars = String(stepsChars(struct));
    if (this.el.style.getPropertyValue("--trtw-steps-ch") !== chars) {
      this.el.style.setProperty("--trtw-steps-ch", chars);
      this.head.style.setProperty("--trtw-steps-ch", chars);
    }
    /** @type {RowData[]} */
    const flat = [];
    /**
     * @param {Item[]} items
     * @param {number} level
     * @param {string | null} parentKey
     */
    const visit = (items, level, parentKey) => {
      for (const it of items) {
        const isGroup = it.kind === "group";
        const expandable = !!it.items?.length;
        // a group opens by itself when the user had opened one of its members (before the group formed)
        const dflt = !isGroup || it.members.some((m) => this.expanded.get(m.key) === true);
        const expanded = expandable && this.isExpanded(it.key, dflt);
        flat.push({ item: it, level, parentKey, expandable, expanded });
        if (expanded && it.items) visit(it.items, level + 1, it.key);
        else if (isGroup && it.running) {
          // the running member is never hidden inside a collapsed group: it is shown inline under it
          // (the newest few: TensorRT runs one per builder thread)
          visit(it.members.filter((m) => m.running).slice(-INLINE_RUNNING_MAX), level + 1, it.key);
        }
      }
    };
    visit(struct.items, 1, null);
    this.flat = flat;
    this.indexOf = new Map(flat.map((d, i) => [d.item.key, i]));
    this.ctx = ctx;
    // forget rows that vanished from the structure
    if (this.rows.size > flat.length) {
      for (const [key, rv] of this.rows) {
        if (!struct.byKey.has(key) && !struct.groups.has(key)) {
          rv.el.remove();
          this.rows.delete(key);
        }
      }
    }
    this.renderWindow();
    const tab = this.tabKey === null ? undefined : this.indexOf.get(this.tabKey);
    if (tab === undefined) this.setTabStop(flat.length ? flat[0].item.key : null);
  }

  /** Whether only a window of the rows is in the DOM (long lists). */
  get virtual() {
    return this.flat.length > VIRTUAL_MIN;
  }

  /** Render the rows in view (all of them for short lists) with few DOM moves; spacers stand in for the rest. */
  renderWindow() {
    const flat = this.flat;
    const n = flat.length;
    let from = 0;
    let to = n;
    if (this.virtual) {
      const height = this.el.clientHeight || DEFAULT_VIEW_PX;
      from = Math.max(0, Math.floor(this.el.scrollTop / ROW_PX) - OVERSCAN);
      to = Math.min(n, from + Math.ceil(height / ROW_PX) + 2 * OVERSCAN);
    }
    this.window = [from, to];
    /** @type {RowView[]} */
    const desired = [];
    /** @type {RowView[]} */
    const liveRows = [];
    const ctx = this.ctx || this.host.rowContext();
    for (let i = from; i < to; i++) {
      const d = flat[i];
      let rv = this.rows.get(d.item.key);
      if (!rv) {
        rv = new RowView(d.item.key);
        this.rows.set(d.item.key, rv);
        this.rowByEl.set(rv.el, rv);
      }
      rv.update(d, ctx);
      if (rv.live) liveRows.push(rv);
      desired.push(rv);
    }
    this.liveRows = liveRows;
    const want = new Set(desired);
    for (const rv of this.visible) if (!want.has(rv)) rv.el.remove();
    const virtual = this.virtual;
    this.topSpacer.style.height = `${from * ROW_PX}px`;
    this.bottomSpacer.style.height = `${(n - to) * ROW_PX}px`;
    // order: walk the container, inserting only rows that are out of place
    const parent = this.el;
    /** @type {Element[]} */
    const order = virtual ? [this.topSpacer, ...desired.map((rv) => rv.el), this.bottomSpacer] : [];
    let ref = parent.firstChild;
    if (virtual) {
      for (const el of order) {
        if (el === ref) ref = ref.nextSibling;
        else parent.insertBefore(el, ref);
      }
    } else {
      for (const rv of desired) {
        if (rv.el === ref) ref = ref.nextSibling;
        else parent.insertBefore(rv.el, ref);
      }
    }
    while (ref) {
      const next = ref.nextSibling;
      ref.remove();
      ref = next;
    }
    this.visible = desired;
    const tabRow = this.tabKey === null ? undefined : this.rows.get(this.tabKey);
    if (tabRow && want.has(tabRow) && tabRow.el.tabIndex !== 0) tabRow.setTabStop(true);
  }

  /** A scroll of a long list: render the new window at the next frame. */
  onScroll() {
    if (!this.virtual || this.scrollFrame) return;
    const raf = globalThis.requestAnimationFrame || ((/** @type {() => void} */ f) => setTimeout(f, 16));
    this.scrollFrame = true;
    raf(() => {
      this.scrollFrame = false;
      this.renderWindow();
    });
  }

  /**
   * Scroll row `index` into view (rendering it if the list is windowed) and focus it.
   * @param {number} index
   * @param {boolean} [focus]
   */
  showIndex(index, focus = true) {
    if (index < 0 || index >= this.flat.length) return;
    const [from, to] = this.window;
    if (this.virtual && (index < from + 1 || index >= to - 1)) {
      const height = this.el.clientHeight || DEFAULT_VIEW_PX;
      this.el.scrollTop = Math.max(0, index * ROW_PX - height / 2);
      this.renderWindow();
    }
    const rv = this.rows.get(this.flat[index].item.key);
    if (!rv) return;
    if (!focus) {
      if (typeof rv.el.scrollIntoView === "function") rv.el.scrollIntoView({ block: "nearest" });
      return;
    }
    this.setTabStop(rv.key);
    rv.el.focus();
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
    const i = this.indexOf.get(rv.key);
    if (i === undefined) return;
    let handled = true;
    switch (e.key) {
      case "Enter":
      case " ":
      case "Spacebar":
        if (rv.expandable) this.toggle(rv.key);
        break;
      case "ArrowRight":
        if (rv.expandable && !rv.expanded) this.toggle(rv.key, true);
        else if (rv.expandable) this.showIndex(i + 1);
        break;
      case "ArrowLeft":
        if (rv.expandable && rv.expanded) this.toggle(rv.key, false);
        else if (rv.parentKey !== null) this.showIndex(this.indexOf.get(rv.parentKey) ?? -1);
        break;
      case "ArrowDown":
        this.showIndex(i + 1);
        break;
      case "ArrowUp":
        this.showIndex(i - 1);
        break;
      case "Home":
        this.showIndex(0);
        break;
      case "End":
        this.showIndex(this.flat.length - 1);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }
}
