// trt_widget build matrix front end: one row per build of a BuildMatrix (status, progress of its current phase,
// elapsed, engine size, Stop), rows that expand to that build's phase tree (TrtView, the BuildWidget view, fed
// through a small model adaptor), Stop all, and, once every build ended, a comparison against a baseline.
// esbuild bundles this entry (with matrixcompare.js) into trt_widget/static/matrix.js.
//
// Contract: Python (MatrixWidget) writes the synced traits below; this module reads them and sends
// {type: "stop", build}, {type: "stop_all"} and {type: "expand", build, open}.  Every string from Python is
// written with textContent / setAttribute, never parsed as HTML.

import { GONE_TEXT, watchKernel } from "../build/kernel.js";
import { TrtView } from "../build/view.js";
import { h, perfNow, setAttr, setBreakable, setText } from "../shared/dom.js";
import { escapeControls, escapeLines, fmtBytes, fmtDuration, keepUnits, percent, str } from "../shared/format.js";
import { readComparison, renderComparison } from "./compare.js";
import { BuildModelAdaptor, parse, readRows } from "./data.js";

/** @typedef {import("./data.js").Row} Row */

/**
 * @typedef {object} MatrixTraits
 * @property {string} status idle | running | done
 * @property {string} rows_json [{id, model, variant, status, detail, elapsed_s, engine_size, error,
 *   phase: {name, step, num_steps} | null, can_force, started}, ...]
 * @property {number[]} expanded build ids whose phase tree is shown
 * @property {string} details_json {"<id>": the BuildWidget traits of that build}
 * @property {string} comparison_json "" until every build ended, then {builds: [{id, model, group, variant, status,
 *   build_s, elapsed_s, engine_size, phases: {name: seconds}, twins}]} (compare.js reads it)
 * @property {string} [title] replaces "Build matrix — N builds" (a watch: "Watching fn() — N builds")
 * @property {string} [note] a line under the header (a watch: which Stop applies, the stop notice)
 * @property {string} [variant_label] the "variant" column's heading (a watch: "call", the TensorRT method)
 * @property {boolean} [stop_buttons] false: hide the Stop buttons (a busy cell: only the kernel interrupt works)
 * @property {string} [output] a command's own stdout and stderr, its last lines, already escaped
 *   (``BuildWidget.run``): shown under the table, scrolled to its end
 */

/**
 * @typedef {Pick<import("@anywidget/types").AnyModel<MatrixTraits>, "get" | "on" | "off">
 *   & {send(msg: import("../shared/messages.js").RowsMessage): void}} MatrixModel
 */

const ACTIVE = new Set(["queued", "running", "cancelling"]);
const TICK_MS = 100;
const STOP_REARM_MS = 2000;

/** One build's table row, and its expanded tree when open. */
class RowView {
  /**
   * @param {MatrixView} host
   * @param {number} id
   */
  constructor(host, id) {
    this.host = host;
    this.id = id;
    this.tr = h("tr", "trtw-mx-row", { "data-build": String(id) });
    this.toggle = h("button", "trtw-mx-toggle", { type: "button", "aria-expanded": "false" });
    this.model = h("td", "trtw-mx-model");
    this.variant = h("td", "trtw-mx-variant");
    this.badge = h("span", "trtw-badge");
    this.phaseName = h("span", "trtw-mx-phase-name");
    this.bar = h("div", "trtw-bar", { role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100" });
    this.fill = h("div", "trtw-fill");
    this.bar.append(this.fill);
    this.steps = h("span", "trtw-steps trtw-mono");
    this.elapsed = h("td", "trtw-mx-elapsed trtw-mono");
    this.size = h("td", "trtw-mx-size trtw-mono");
    this.stop = h("button", "trtw-btn trtw-stop trtw-mx-stop", { type: "button" });
    this.stop.textContent = "Stop";
    const toggleCell = h("td", "trtw-mx-toggle-cell");
    toggleCell.append(this.toggle);
    const statusCell = h("td", "trtw-mx-status");
    statusCell.append(this.badge);
    this.phase = h("td", "trtw-mx-phase");
    const phaseBox = h("div", "trtw-mx-phase-box"); // a grid: the name shortens first (matrix.css)
    phaseBox.append(this.phaseName, this.bar, this.steps);
    this.phase.append(phaseBox);
    const stopCell = h("td", "trtw-mx-stop-cell");
    stopCell.append(this.stop);
    this.tr.append(toggleCell, this.model, this.variant, statusCell, this.phase, this.elapsed, this.size, stopCell);
    this.detailTr = h("tr", "trtw-mx-detail", { "data-build": String(id) });
    this.detailTr.hidden = true;
    this.detailCell = h("td", "", { colspan: "8" });
    this.detailTr.append(this.detailCell);
    /** @type {Row | null} */
    this.row = null;
    this.anchor = { elapsed: 0, at: perfNow() };
    this.stopPending = false;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.stopTimer = null;
    /** @type {BuildModelAdaptor | null} */
    this.adaptor = null;
    /** @type {TrtView | null} */
    this.view = null;
  }

  /** @param {Row} row */
  update(row) {
    const prev = this.row;
    if (!prev || prev.elapsed_s !== row.elapsed_s || prev.status !== row.status) {
      this.anchor = { elapsed: row.elapsed_s, at: perfNow() };
    }
    if (prev && prev.status !== row.status) this.stopPending = false;
    this.row = row;
    setBreakable(this.model, escapeControls(row.model));
    setBreakable(this.variant, escapeControls(row.variant));
    setText(this.badge, row.status);
    this.badge.dataset.status = row.status;
    this.tr.dataset.status = row.status;
    const p = row.phase;
    const withSteps = p !== null && p.num_steps > 1;
    // a queued row's detail says what it waits for, where its runner knows ("starting a local Ray instance …")
    const note = row.status === "queued" ? row.detail || "waiting for a builder" : row.error || (p ? "" : row.detail);
    const shown = escapeLines(p ? p.name : note);
    // our own prose ("cancelled after 6.5 s") keeps each number with its unit; names and errors stay as they are
    setText(this.phaseName, p || (row.error && note === row.error) ? shown : keepUnits(shown));
    setAttr(this.phaseName, "title", shown || null);
    this.bar.hidden = !withSteps;
    this.steps.hidden = !withSteps;
    if (p && withSteps) {
      const pct = percent(p.step, p.num_steps);
      this.fill.style.width = `${pct}%`;
      setAttr(this.bar, "aria-valuenow", String(pct));
      setText(this.steps, `${p.step}/${p.num_steps}`);
    }
    setText(this.size, row.engine_size > 0 ? fmtBytes(row.engine_size) : "");
    const active = ACTIVE.has(row.status);
    const force = row.status === "cancelling" && row.can_force;
    setText(this.stop, force ? "Force stop" : "Stop");
    this.stop.disabled = !active || this.stopPending || (row.status === "cancelling" && !row.can_force);
    this.stop.hidden = !active && row.status !== "idle" && row.status !== "ended";
    this.tick(perfNow());
  }

  /**
   * The build's time in seconds at `now` (extrapolated from the last snapshot while it is queued or live).
   * @param {number} now
   * @returns {number}
   */
  elapsedAt(now) {
    const row = this.row;
    if (!row || !ACTIVE.has(row.status)) return row ? row.elapsed_s : 0;
    return this.anchor.elapsed + Math.max(0, now - this.anchor.at) / 1000;
  }

  /** @param {number} now */
  tick(now) {
    const row = this.row;
    if (!row) return;
    // no time while queued (the build's clock restarts when it builds) nor for one that never left its queue
    const timed = row.started && row.status !== "idle" && row.status !== "queued";
    setText(this.elapsed, timed ? fmtDuration(this.elapsedAt(now)) : "");
  }

  onStop() {
    if (this.stop.disabled) return;
    this.host.send({ type: "stop", build: this.id });
    this.stopPending = true;
    this.stop.disabled = true;
    if (this.stopTimer) clearTimeout(this.stopTimer);
    this.stopTimer = setTimeout(() => {
      this.stopTimer = null;
      this.stopPending = false;
      if (this.row) this.update(this.row);
    }, STOP_REARM_MS);
  }

  /** @param {boolean} open */
  setOpen(open) {
    setAttr(this.toggle, "aria-expanded", String(open));
    setText(this.toggle, open ? "\u25be" : "\u25b8");
    setAttr(this.toggle, "title", open ? "Hide the phase tree" : "Show the phase tree");
    this.detailTr.hidden = !open;
    if (open && !this.view) {
      this.adaptor = new BuildModelAdaptor((msg) => this.host.send(msg), this.id);
      this.adaptor.update(this.host.details()[String(this.id)]);
      const model = /** @type {import("../build/widget.js").Model} */ (/** @type {unknown} */ (this.adaptor));
      this.view = new TrtView(model, this.detailCell);
      // the adaptor hears nothing from the kernel: the matrix tells the tree when it is gone
      if (this.host.kernelGone) this.view.onKernelGone(this.host.kernelGone);
    } else if (!open && this.view) {
      this.view.destroy();
      this.view = null;
      this.adaptor = null;
    }
  }

  destroy() {
    if (this.stopTimer) clearTimeout(this.stopTimer);
    if (this.view) this.view.destroy();
    this.view = null;
    this.tr.remove();
    this.detailTr.remove();
  }
}

/** The whole matrix view: header, table, comparison. */
export class MatrixView {
  /**
   * @param {MatrixModel} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    /** @type {Map<number, RowView>} */
    this.rows = new Map();
    /** @type {Set<number>} */
    this.open = new Set();
    /** @type {number | null} */
    this.baseline = null;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    /** @type {[string, () => void][]} */
    this.handlers = [];
    /** @type {string} why the kernel is gone ("" while it is there) */
    this.kernelGone = "";
    /** @type {Map<number, number>} the builds that were open when it went, and their frozen times */
    this.endedAt = new Map();
    this.root = h("div", "trtw trtw-matrix");
    const header = h("div", "trtw-header");
    const info = h("div", "trtw-info");
    this.title = h("span", "trtw-mx-title");
    this.counts = h("span", "trtw-detail trtw-mx-counts");
    this.note = h("div", "trtw-detail trtw-mx-note");
    this.note.hidden = true;
    info.append(this.title, this.counts, this.note);
    this.stopAll = h("button", "trtw-btn trtw-stop trtw-mx-stop-all", { type: "button" });
    this.stopAll.textContent = "Stop all";
    const controls = h("div", "trtw-controls");
    controls.append(this.stopAll);
    header.append(info, controls);
    this.table = h("table", "trtw-mx-table");
    /** @type {HTMLElement | null} */
    this.variantHead = null;
    const head = h("tr", "trtw-mx-head");
    for (const label of ["", "model", "variant", "status", "current phase", "elapsed", "engine", ""]) {
      const th = h("th");
      th.textContent = label;
      if (label === "variant") this.variantHead = th; // a watch names what it holds ("call")
      head.append(th);
    }
    const thead = h("thead");
    thead.append(head);
    this.tbody = h("tbody");
    this.table.append(thead, this.tbody);
    this.compare = h("div", "trtw-mx-compare");
    this.compare.hidden = true;
    this.output = h("pre", "trtw-mx-output", { "aria-label": "the command's output" });
    this.output.hidden = true;
    this.root.append(header, this.table, this.output, this.compare);
    el.append(this.root);
    this.stopAll.addEventListener("click", () => {
      if (!this.stopAll.disabled) this.send({ type: "stop_all" });
    });
    this.tbody.addEventListener("click", (e) => this.onClick(e));
    for (const trait of ["rows_json", "status", "title", "note", "stop_buttons", "variant_label"]) {
      this._listen(trait, () => this.updateRows());
    }
    this._listen("expanded", () => this.updateExpanded());
    this._listen("details_json", () => this.updateDetails());
    this._listen("comparison_json", () => this.updateComparison());
    this._listen("output", () => this.updateOutput());
    this.updateRows();
    this.updateOutput();
    this.updateExpanded();
    this.updateComparison();
    this.unwatchKernel = watchKernel(
      /** @type {{on?: unknown, off?: unknown, widget_manager?: unknown}} */ (/** @type {unknown} */ (model)),
      (reason) => this.onKernelGone(GONE_TEXT[reason] || GONE_TEXT.lost),
      () => [...this.rows.values()].some((rv) => rv.row !== null && ACTIVE.has(rv.row.status)),
    );
  }

  /**
   * The kernel went away: its builds can say nothing more.  Every build still queued or live is shown as
   * ended with the reason, its clock frozen where it was; Stop and Stop all are disabled (nobody to send to).
   * @param {string} text
   */
  onKernelGone(text) {
    if (this.kernelGone) return;
    this.kernelGone = text;
    const now = perfNow();
    for (const rv of this.rows.values()) {
      if (rv.row && ACTIVE.has(rv.row.status)) this.endedAt.set(rv.id, rv.elapsedAt(now));
      if (rv.view) rv.view.onKernelGone(text);
    }
    this.updateRows();
  }

  /**
   * A row as shown: a build that was open when the kernel went stays ended, whatever a snapshot says.
   * @param {Row} row
   * @returns {Row}
   */
  shown(row) {
    const at = this.endedAt.get(row.id);
    if (at === undefined) return row;
    return {
      ...row,
      status: "ended",
      detail: this.kernelGone,
      error: "",
      phase: null,
      elapsed_s: at,
      can_force: false,
    };
  }

  /**
   * @param {string} trait
   * @param {() => void} fn
   */
  _listen(trait, fn) {
    const m = this.model;
    if (!m || typeof m.on !== "function") return;
    const ev = `change:${trait}`;
    m.on(/** @type {any} */ (ev), fn);
    this.handlers.push([ev, fn]);
  }

  /**
   * @param {keyof MatrixTraits} name
   * @returns {unknown}
   */
  get(name) {
    try {
      return this.model && typeof this.model.get === "function" ? this.model.get(name) : undefined;
    } catch {
      return undefined;
    }
  }

  /** @param {import("../shared/messages.js").RowsMessage} msg */
  send(msg) {
    if (this.model && typeof this.model.send === "function") this.model.send(msg);
  }

  /** @returns {Record<string, unknown>} */
  details() {
    const d = parse(this.get("details_json"), {});
    return d && typeof d === "object" ? /** @type {Record<string, unknown>} */ (d) : {};
  }

  /** @param {Event} e */
  onClick(e) {
    const target = /** @type {Element | null} */ (e.target instanceof Element ? e.target : null);
    const tr = target ? target.closest("tr.trtw-mx-row") : null;
    if (!tr) return;
    const rv = this.rows.get(Number(tr.getAttribute("data-build")));
    if (!rv) return;
    if (target?.closest(".trtw-mx-stop")) {
      rv.onStop();
      return;
    }
    if (target?.closest("button, td.trtw-mx-model, td.trtw-mx-variant")) {
      const open = !this.open.has(rv.id);
      if (open) this.open.add(rv.id);
      else this.open.delete(rv.id);
      rv.setOpen(open);
      this.send({ type: "expand", build: rv.id, open });
    }
  }

  updateRows() {
    const rows = readRows(parse(this.get("rows_json"), [])).map((r) => this.shown(r));
    const ids = new Set(rows.map((r) => r.id));
    for (const [id, rv] of this.rows) {
      if (!ids.has(id)) {
        rv.destroy();
        this.rows.delete(id);
      }
    }
    /** @type {ChildNode | null} */
    let prev = null;
    for (const row of rows) {
      let rv = this.rows.get(row.id);
      if (!rv) {
        rv = new RowView(this, row.id);
        this.rows.set(row.id, rv);
        rv.setOpen(this.open.has(row.id));
      }
      rv.update(row);
      // the order of rows_json; rows already in place are not moved (moving 100 rows re-lays out the table)
      /** @type {ChildNode | null} */
      const expected = prev === null ? this.tbody.firstChild : prev.nextSibling;
      if (expected !== rv.tr) this.tbody.insertBefore(rv.tr, expected);
      if (rv.tr.nextSibling !== rv.detailTr) rv.tr.after(rv.detailTr);
      prev = rv.detailTr;
    }
    /** @type {Record<string, number>} */
    const counts = {};
    for (const r of rows) counts[r.status] = (counts[r.status] || 0) + 1;
    const title = str(this.get("title"));
    setText(this.title, title || `Build matrix \u2014 ${rows.length} build${rows.length === 1 ? "" : "s"}`);
    const note = str(this.get("note"));
    setText(this.note, keepUnits(note));
    if (this.variantHead) setText(this.variantHead, str(this.get("variant_label")) || "variant");
    this.note.hidden = !note;
    this.root.dataset.stopButtons = this.get("stop_buttons") === false ? "off" : "on";
    setText(
      this.counts,
      Object.entries(counts)
        .map(([s, n]) => `${n} ${s}`)
        .join(", "),
    );
    const active = rows.some((r) => ACTIVE.has(r.status));
    const ended = rows.some((r) => r.status === "ended");
    this.stopAll.disabled = !active || Boolean(this.kernelGone);
    this.stopAll.hidden =
      (!active && !ended && rows.some((r) => r.status !== "idle")) || this.get("stop_buttons") === false;
    this.root.dataset.status = ended ? "ended" : str(this.get("status")) || "idle";
    this._syncTicker(active);
  }

  updateExpanded() {
    const value = this.get("expanded");
    if (!Array.isArray(value)) return;
    this.open = new Set(value.filter((v) => typeof v === "number"));
    for (const rv of this.rows.values()) rv.setOpen(this.open.has(rv.id));
    this.updateDetails();
  }

  updateDetails() {
    const details = this.details();
    for (const rv of this.rows.values()) if (rv.adaptor) rv.adaptor.update(details[String(rv.id)]);
  }

  /** @param {boolean} active */
  _syncTicker(active) {
    if (active && this.timer === null) {
      this.timer = setInterval(() => {
        const now = perfNow();
        for (const rv of this.rows.values()) rv.tick(now);
      }, TICK_MS);
    } else if (!active && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  /** The command's output: its tail stays in view unless the reader scrolled up to read earlier lines. */
  updateOutput() {
    const text = str(this.get("output"));
    const out = this.output;
    const atEnd = out.hidden || out.scrollHeight - out.scrollTop - out.clientHeight < 4;
    setText(out, escapeLines(text));
    out.hidden = !text;
    if (atEnd) out.scrollTop = out.scrollHeight;
  }

  updateComparison() {
    const data = /** @type {{builds?: unknown}} */ (parse(this.get("comparison_json"), {}) || {});
    const builds = readComparison(data.builds);
    this.compare.hidden = builds.length === 0;
    this.baseline = renderComparison(this.compare, builds, this.baseline, (id) => {
      this.baseline = id;
      this.updateComparison();
    });
  }

  destroy() {
    this.unwatchKernel();
    this._syncTicker(false);
    const m = this.model;
    if (m && typeof m.off === "function") for (const [ev, fn] of this.handlers) m.off(/** @type {any} */ (ev), fn);
    this.handlers = [];
    for (const rv of this.rows.values()) rv.destroy();
    this.rows.clear();
    this.root.remove();
  }
}

/** @satisfies {import("@anywidget/types").AnyWidget<MatrixTraits>} */
export default {
  render({ model, el }) {
    const view = new MatrixView(model, el);
    return () => view.destroy();
  },
};
