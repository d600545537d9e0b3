// TrtView: one rendering of a BuildWidget model.  It reads the synced traits, keeps the browser clock
// anchored to the last snapshot (ticking at 10 Hz while a build is live), and wires the header, tree,
// timeline and log panel to the model's change events.

import { h, perfNow, setText } from "../shared/dom.js";
import { num, plainObject, str } from "../shared/format.js";
import { uiStateFor } from "../shared/uistate.js";
import { EngineView } from "./engine.js";
import { Header, LogPanel } from "./header.js";
import { GONE_TEXT, watchKernel } from "./kernel.js";
import { RowSync } from "./rowsync.js";
import { buildStructure, runningPath } from "./structure.js";
import { TimelineView } from "./timeline.js";
import { TreeView } from "./tree.js";

/** @typedef {import("./widget.js").Traits} Traits */
/** @typedef {import("./widget.js").Model} Model */
/** @typedef {import("./rows.js").RowContext} RowContext */
/** @typedef {import("../shared/uistate.js").UiState} UiState */

const LIVE_STATUSES = new Set(["running", "cancelling"]);
const TICK_MS = 100; // 10 Hz live ticker
const STOP_REARM_MS = 2000; // re-enable Stop if no status change follows a click
const STOP_ACK_MS = 1500; // no "cancelling" from the kernel this long after a click: say the kernel is busy

export class TrtView {
  /**
   * @param {Model} model
   * @param {HTMLElement} el
   */
  constructor(model, el) {
    this.model = model;
    this.host = el;
    this.ui = uiStateFor(model);
    this.struct = buildStructure([], 0);
    this.status = "idle";
    this.elapsed = 0; // elapsed_s of the last snapshot
    this.receivedAt = perfNow(); // when it arrived
    this.mono = 0; // the clock never runs backwards within a build
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    this.stopPending = false;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.stopTimer = null;
    this.stopUnacked = false; // a Stop click the kernel has not answered within STOP_ACK_MS
    this.stopOutcome = ""; // the kernel's answer to a Stop it read after the build had ended
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.ackTimer = null;
    this.rowSync = new RowSync();
    this.syncAskedAt = -1; // the row seq at which the whole list was last asked for
    /** @type {[string, (msg?: unknown) => void][]} */
    this.handlers = [];
    /** @type {[EventTarget, string, (e: Event) => void][]} */
    this.domHandlers = [];

    this.header = new Header();
    this.tree = new TreeView(this.ui.expanded, this);
    this.timeline = new TimelineView();
    this.engine = new EngineView();
    this.logs = new LogPanel();
    this.root = h("div", "trtw");
    this.empty = h("div", "trtw-empty");
    const body = h("div", "trtw-body");
    const hd = this.header;
    // the notices follow the rows, in the flow: they never cover a row (the one they name least of all), and
    // coming and going they move nothing above them
    const notices = h("div", "trtw-notices");
    notices.append(hd.notice, hd.unackedEl);
    body.append(this.empty, this.tree.head, this.tree.el, this.timeline.el, this.engine.el, notices);
    this.root.append(hd.el, hd.errorEl, body, this.logs.el);
    this.host.append(this.root);

    this._on(hd.stopBtn, "click", () => this.onStop());
    this._on(hd.pathEl, "click", () => this.revealRunning());
    this._on(hd.treeBtn, "click", () => this.setMode("tree"));
    this._on(hd.tlBtn, "click", () => this.setMode("timeline"));
    this._on(hd.engineBtn, "click", () => this.setMode("engine"));
    this._on(this.tree.el, "click", (e) => this.tree.onClick(/** @type {MouseEvent} */ (e)));
    this._on(this.tree.el, "keydown", (e) => this.tree.onKey(/** @type {KeyboardEvent} */ (e)));
    this._on(this.tree.el, "scroll", () => this.tree.onScroll());
    this._on(this.tree.el, "focusin", (e) => this.tree.onFocusIn(e));
    this._on(this.logs.el, "toggle", () => {
      this.ui.logsOpen = this.logs.el.open;
    });
    this._listen();
    /** @type {string} why the kernel is gone ("" while it is there) */
    this.kernelGone = "";
    this.unwatchKernel = watchKernel(
      /** @type {{on?: unknown, off?: unknown, widget_manager?: unknown}} */ (/** @type {unknown} */ (model)),
      (reason) => this.onKernelGone(GONE_TEXT[reason] || GONE_TEXT.lost),
      () => this.isLive() || this.status === "queued",
    );
    this.refreshAll();
  }

  /**
   * The kernel went away: a build it was running can say nothing more.  Freeze the clock where it was, show
   * the last state as ended with the reason, and disable Stop (there is nobody to send it to).
   * @param {string} text
   */
  onKernelGone(text) {
    if (this.kernelGone) return;
    const wasOpen = this.isLive() || this.status === "queued";
    const at = this.now();
    this.kernelGone = text;
    if (!wasOpen) return; // a finished build's result stays true
    this.elapsed = at;
    this.status = "ended";
    this.stopPending = false;
    this.stopUnacked = false;
    this.updateTree();
    this.updateHeader();
    this.tick();
    this._syncTicker();
  }

  /**
   * A trait's value, or undefined if the model has none (or fails).
   * @param {keyof Traits} name
   * @returns {unknown}
   */
  get(name) {
    try {
      const m = this.model;
      if (!m || typeof m.get !== "function") return undefined;
      return m.get(name);
    } catch {
      return undefined;
    }
  }

  /**
   * The phase rows (see rowsync.js): the whole list from `phases_json`, then deltas from `phases_delta`.
   * @returns {unknown[]}
   */
  phases() {
    this.syncRows();
    return this.rowSync.rows;
  }

  /**
   * Bring the rows up to date with the traits; on a missed delta ask Python for the whole list (once per gap).
   * @returns {boolean} whether the rows changed
   */
  syncRows() {
    const full = this.rowSync.loadFull(this.get("phases_json"), this.get("phases_seq"));
    const result = this.rowSync.applyDelta(this.get("phases_delta"));
    if (result === "gap") {
      if (this.syncAskedAt !== this.rowSync.seq && this.model && typeof this.model.send === "function") {
        this.syncAskedAt = this.rowSync.seq;
        this.model.send({ type: "sync" });
      }
    } else if (full || result === "applied") {
      this.syncAskedAt = -1;
    }
    return full || result === "applied";
  }

  /**
   * @param {EventTarget} target
   * @param {string} type
   * @param {(e: Event) => void} fn
   */
  _on(target, type, fn) {
    target.addEventListener(type, fn);
    this.domHandlers.push([target, type, fn]);
  }

  _listen() {
    const m = this.model;
    if (!m || typeof m.on !== "function") return;
    /**
     * @param {keyof Traits} trait
     * @param {() => void} fn
     */
    const add = (trait, fn) => {
      const ev = `change:${trait}`;
      m.on(ev, fn);
      this.handlers.push([ev, fn]);
    };
    // A snapshot (elapsed_s / status / phases_json, usually set together) re-anchors the browser clock;
    // a status change also re-renders rows (live -> frozen).
    /** @param {boolean} phasesChanged */
    const snapshot = (phasesChanged) => () => {
      const prev = this.status;
      this._readClock();
      const statusChanged = this.status !== prev;
      if (statusChanged) {
        this.stopPending = false;
        this.stopUnacked = false;
      }
      if (phasesChanged || statusChanged) this.updateTree();
      this.updateHeader();
      this.tick();
      this._syncTicker();
    };
    add("elapsed_s", snapshot(false));
    add("status", snapshot(false));
    add("started", snapshot(false));
    add("phases_json", snapshot(true));
    add("phases_delta", snapshot(true));
    add("history_delta", () => this.updateTree());
    add("history_basis", () => this.updateTree());
    add("eta", () => this.updateTree());
    add("status_detail", () => this.updateHeader());
    add("cancel", () => this.updateHeader());
    add("can_force", () => {
      this.stopPending = false;
      this.updateHeader();
    });
    add("engine_size", () => this.updateHeader());
    add("engine_json", () => this.updateEngine());
    /** @param {unknown} msg a KernelMessage (shared/messages.js), checked: it may be anything */
    const answer = (msg) => {
      const m = msg && typeof msg === "object" ? /** @type {Record<string, unknown>} */ (msg) : null;
      if (m?.type !== "stop_outcome" || typeof m.text !== "string") return;
      this.stopOutcome = m.text;
      this.updateHeader();
    };
    m.on("msg:custom", answer);
    this.handlers.push(["msg:custom", answer]);
    add("error", () => this.updateError());
    add("logs", () => this.updateLogs());
    add("resources", () => this.updateResources());
  }

  destroy() {
    this.unwatchKernel();
    this._stopTicker();
    if (this.stopTimer) clearTimeout(this.stopTimer);
    this.stopTimer = null;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    const m = this.model;
    if (m && typeof m.off === "function") for (const [ev, fn] of this.handlers) m.off(ev, fn);
    this.handlers = [];
    for (const [t, type, fn] of this.domHandlers) t.removeEventListener(type, fn);
    this.domHandlers = [];
    this.root.remove();
  }

  // -- clock: elapsed_s anchored at arrival time, extrapolated while live
  _readClock() {
    if (this.status === "ended") return; // the kernel is gone: nothing it left behind is live
    const st = str(this.get("status")) || "idle";
    const el = num(this.get("elapsed_s"));
    const changed = st !== this.status || el !== this.elapsed;
    // new build (clock went back) or a (re)start: forget the monotonic floor
    if (el < this.elapsed - 1e-6 || (LIVE_STATUSES.has(st) && !LIVE_STATUSES.has(this.status))) this.mono = 0;
    this.status = st;
    this.elapsed = el;
    if (changed) this.receivedAt = perfNow();
  }

  isLive() {
    return LIVE_STATUSES.has(this.status);
  }

  /**
   * Current build time in seconds (browser-extrapolated while live).
   * @returns {number}
   */
  now() {
    if (!this.isLive()) return this.elapsed;
    const t = this.elapsed + Math.max(0, perfNow() - this.receivedAt) / 1000;
    if (t < this.mono) return this.mono; // never run backwards on jittery snapshots
    this.mono = t;
    return t;
  }

  _syncTicker() {
    if (this.isLive()) {
      if (this.timer === null) this.timer = setInterval(() => this.tick(), TICK_MS);
    } else {
      this._stopTicker();
    }
  }

  _stopTicker() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Live text only: header clock, ETA, cancelling notice, running rows. */
  tick() {
    const now = this.now();
    this._tickHeader(now);
    for (const rv of this.tree.liveRows) rv.tick(now);
    if (this.ui.mode === "timeline" && this.isLive()) this.timeline.layout(now, true, false);
  }

  /** @param {number} now */
  _tickHeader(now) {
    // a build that ended in its queue never built: no time (a missing trait, as from an older kernel, is a start)
    const timed = this.get("started") !== false || this.isLive() || this.status === "idle";
    this.header.tick(now, this.status, this.isLive(), this.get("eta"), this.get("cancel"), this.get("activity"), timed);
  }

  refreshAll() {
    this._readClock();
    this.updateEngine(false); // before the header: it shows the Engine button
    this.updateHeader();
    this.updateError();
    this.updateLogs();
    this.updateResources();
    this.updateTree();
    this._syncTicker();
  }

  /**
   * Read the engine report; the Engine view shows it (and goes away with it, e.g. on a new build).
   * @param {boolean} [render]
   */
  updateEngine(render = true) {
    this.engine.update(this.get("engine_json"));
    if (!this.engine.hasReport() && this.ui.mode === "engine") this.ui.mode = "tree";
    if (render) {
      this.updateHeader();
      this.renderBody();
    }
  }

  updateHeader() {
    const st = this.status;
    this.root.dataset.status = st;
    this.header.update({
      status: st,
      detail: st === "ended" ? this.kernelGone : str(this.get("status_detail")),
      error: str(this.get("error")),
      engineSize: num(this.get("engine_size")),
      canForce: this.get("can_force") === true,
      stopPending: this.stopPending,
      stopUnacked: this.stopUnacked,
      stopOutcome: this.stopOutcome,
      mode: this.ui.mode,
      hasRows: this.struct.items.length > 0,
      hasEngine: this.engine.hasReport(),
    });
    this._tickHeader(this.now());
  }

  onStop() {
    const btn = this.header.stopBtn;
    if (btn.disabled) return;
    if (this.model && typeof this.model.send === "function") this.model.send({ type: "stop" });
    // Swallow double clicks until Python reports the new state (a second "stop" while cancelling would
    // mean force stop).
    this.stopPending = true;
    btn.disabled = true;
    const sentWhile = this.status;
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = setTimeout(() => {
      this.ackTimer = null;
      if (this.status === sentWhile && sentWhile === "running") {
        this.stopUnacked = true;
        this.updateHeader();
      }
    }, STOP_ACK_MS);
    if (this.stopTimer) clearTimeout(this.stopTimer);
    this.stopTimer = setTimeout(() => {
      this.stopTimer = null;
      this.stopPending = false;
      this.updateHeader();
    }, STOP_REARM_MS);
  }

  /** @param {"tree" | "timeline" | "engine"} mode */
  setMode(mode) {
    if (this.ui.mode === mode) return;
    this.ui.mode = mode;
    this.updateHeader();
    this.updateTree();
  }

  updateError() {
    this.header.setError(str(this.get("error")));
  }

  updateLogs() {
    this.logs.update(this.get("logs"), this.ui.logsOpen);
  }

  updateResources() {
    this.header.resources.update(this.get("resources"));
  }

  // -- tree / timeline
  updateTree() {
    this.applyPhases(this.phases());
  }

  /**
   * Rebuild the structure from the phase rows and reconcile the DOM.
   * @param {unknown} phases
   */
  applyPhases(phases) {
    this.struct = buildStructure(phases, this.elapsed, this.status === "ended");
    this.renderBody();
  }

  /** Show the innermost running phase in the tree: open its ancestors, switch to the tree, scroll to it. */
  revealRunning() {
    const path = runningPath(this.struct);
    if (!path.length) return;
    for (const p of path.slice(0, -1)) this.ui.expanded.set(p.key, true);
    this.setMode("tree");
    this.tree.reconcile();
    this.tree.showIndex(this.tree.indexOf.get(path[path.length - 1].key) ?? -1, false);
  }

  renderBody() {
    const s = this.struct;
    this.header.setPath(this.isLive() ? runningPath(s) : []);
    const hasRows = s.items.length > 0;
    const engine = this.ui.mode === "engine" && this.engine.hasReport();
    const timeline = this.ui.mode === "timeline" && !engine;
    this.engine.el.hidden = !engine;
    this.empty.hidden = hasRows || engine;
    /** @type {Record<string, string>} */
    const waiting = {
      idle: "No build running.",
      queued: "Queued: waiting for a free builder\u2026",
    };
    const emptyText = this.isLive()
      ? "Waiting for the first build phase\u2026"
      : waiting[this.status] || "No build phases recorded.";
    setText(this.empty, hasRows ? "" : emptyText);
    this.tree.el.hidden = timeline || engine || !hasRows;
    this.tree.head.hidden = this.tree.el.hidden;
    this.header.seg.hidden = !hasRows && !this.engine.hasReport();
    this.timeline.el.hidden = !timeline || !hasRows;
    if (engine) {
      this.tree.liveRows = [];
      this.engine.renderRows(true);
    } else if (timeline) {
      this.tree.liveRows = [];
      this.timeline.update(s, this.now(), this.isLive());
    } else {
      this.tree.reconcile();
    }
  }

  /**
   * What every tree row of this update shares (TreeHost).
   * @returns {RowContext}
   */
  rowContext() {
    const eta = plainObject(this.get("eta"));
    const basis = plainObject(this.get("history_basis"));
    return {
      live: this.isLive(),
      now: this.now(),
      hd: plainObject(this.get("history_delta")),
      eta: eta && this.status !== "cancelling" ? plainObject(eta.phases) : null, // stopping: no time left to count
      basis: str(basis?.said) || (eta ? str(eta.based_on) : ""),
      basedAt: basis && typeof basis.created === "number" && Number.isFinite(basis.created) ? basis.created : null,
    };
  }
}
