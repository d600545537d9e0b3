// The parts around the tree: the header (status badge, clock, engine size, ETA, resource sparkline, view
// switch, Stop), the cancelling / unanswered-Stop notices, the error box and the TensorRT log panel.

import { h, setAttr, setText, svg } from "../shared/dom.js";
import {
  escapeControls,
  escapeLines,
  fmtApprox,
  fmtBytes,
  fmtDuration,
  fmtQuiet,
  fmtTiming,
  keepUnits,
  NBSP,
  num,
  str,
} from "../shared/format.js";

/** @type {Record<string, string>} */
const STATUS_LABELS = {
  idle: "Idle",
  queued: "Queued",
  running: "Running",
  cancelling: "Cancelling",
  succeeded: "Succeeded",
  cancelled: "Cancelled",
  failed: "Failed",
  ended: "Ended", // the kernel went away while the build ran (view.js)
};

export const UNACKED_STOP_TEXT =
  "Stop has not reached the kernel: it is busy running a cell (a blocking wait(), another cell, or an " +
  "await on ipykernel 6 or marimo). Interrupt the kernel (\u25a0) to stop the build now; otherwise Stop " +
  "takes effect when the cell ends.";

const FORCE_HINT = " Click \u201cForce stop\u201d to terminate the build process.";
/** Cancelling a build that cannot be forced (a thread of the kernel): what will happen, and what can be done. */
export const THREAD_HINT =
  " TensorRT looks for a stop only between steps, and this build runs on a thread of the kernel, which cannot " +
  "be ended from outside: it stops when this step ends. To end it now, restart the kernel (its variables are " +
  'lost). Builds with isolation="process" (the default) can be force-stopped.';

/**
 * @param {unknown} v
 * @returns {Record<string, unknown> | null} v if it is an object (arrays included), else null
 */
function record(v) {
  return v && typeof v === "object" ? /** @type {Record<string, unknown>} */ (v) : null;
}

/**
 * What the header shows besides the clock.
 * @typedef {object} HeaderState
 * @property {string} status
 * @property {string} detail status_detail
 * @property {string} error
 * @property {number} engineSize bytes
 * @property {boolean} canForce
 * @property {boolean} stopPending a Stop click Python has not answered yet (the button stays disabled)
 * @property {boolean} stopUnacked a Stop click the kernel has not answered in time
 * @property {string} [stopOutcome] what came of a Stop the kernel read after the build had ended
 * @property {"tree" | "timeline" | "engine"} mode
 * @property {boolean} hasRows there are phase rows (else the view switch is hidden)
 * @property {boolean} [hasEngine] there is an engine report (the Engine view)
 */

export class Header {
  constructor() {
    this.el = h("div", "trtw-header");
    this.badge = h("span", "trtw-badge", { role: "status", "aria-live": "polite" });
    this.detail = h("span", "trtw-detail");
    this.elapsedEl = h("span", "trtw-elapsed trtw-mono", { title: "Total build time" });
    this.sizeEl = h("span", "trtw-size", { title: "Serialized engine size" });
    this.etaEl = h("span", "trtw-eta");
    this.quietEl = h("span", "trtw-quiet", {
      title:
        "Time since TensorRT's last progress callback. TensorRT can stay silent for a long time inside one " +
        "step; the builder's CPU use (memory tooltip) tells working from stuck.",
    });
    this.quietEl.hidden = true;
    this.resources = new ResourceView();
    const seg = h("span", "trtw-seg", { role: "group", "aria-label": "View" });
    this.seg = seg;
    this.treeBtn = h("button", "trtw-btn trtw-seg-btn", { type: "button" });
    this.treeBtn.textContent = "Tree";
    this.tlBtn = h("button", "trtw-btn trtw-seg-btn", { type: "button" });
    this.tlBtn.textContent = "Timeline";
    this.engineBtn = h("button", "trtw-btn trtw-seg-btn", { type: "button" });
    this.engineBtn.textContent = "Engine";
    // until the build has an engine report: invisible but keeping its place, so that its coming at the build's
    // end moves neither Tree nor Timeline (the controls are right-aligned)
    this.showEngineBtn(false);
    seg.append(this.treeBtn, this.tlBtn, this.engineBtn);
    this.stopBtn = h("button", "trtw-btn trtw-stop", { type: "button" });
    this.stopBtn.textContent = "Stop";
    const info = h("div", "trtw-info");
    info.append(this.badge, this.elapsedEl, this.sizeEl, this.etaEl, this.quietEl, this.resources.el, this.detail);
    const controls = h("div", "trtw-controls");
    // Stop left of the view switch: the controls are right-aligned, so Stop leaving at the build's end moves nothing
    controls.append(this.stopBtn, seg);
    this.el.append(info, controls);

    this.pathEl = h("button", "trtw-path", {
      type: "button",
      title: "Where the build is now: click to show it in the tree",
    });
    this.pathEl.hidden = true;
    this.el.append(this.pathEl);
    this.pathText = ""; // the running path (setPath)
    this.timingText = ""; // what the autotuner is timing (tick)

    this.notice = h("div", "trtw-notice", { role: "status" });
    this.noticeText = h("span", "trtw-notice-text");
    this.noticeHint = h("span", "trtw-notice-hint");
    this.notice.append(this.noticeText, this.noticeHint);
    this.unackedEl = h("div", "trtw-unacked", { role: "alert" });
    this.unackedEl.hidden = true;
    this.errorEl = h("div", "trtw-error", { role: "alert" });
  }

  /** @param {HeaderState} s */
  update(s) {
    const st = s.status;
    setText(this.badge, STATUS_LABELS[st] || st);
    this.badge.dataset.status = st;
    // A failed build's detail is the first line of its error, which the error box already shows.
    const detail = st === "failed" && s.error ? "" : s.detail;
    setText(this.detail, keepUnits(escapeLines(detail)));
    this.detail.hidden = !detail;
    const size = s.engineSize;
    setText(this.sizeEl, size > 0 ? `engine ${fmtBytes(size)}` : "");
    this.sizeEl.hidden = !(size > 0);

    const canForce = s.canForce;
    const cancelling = st === "cancelling";
    let enabled = st === "running" || st === "queued" || (cancelling && canForce);
    const label = cancelling ? (canForce ? "Force stop" : "Stopping\u2026") : "Stop";
    if (s.stopPending) enabled = false;
    setText(this.stopBtn, label);
    this.stopBtn.disabled = !enabled;
    // Stop only means something while a build can be stopped; the view switch only with rows to view.
    // Ended (the kernel is gone): still shown, disabled, so it is clear that there is nothing to stop.
    this.stopBtn.hidden = !(st === "running" || st === "queued" || cancelling || st === "ended");
    this.seg.hidden = !s.hasRows && !s.hasEngine;
    const stopTitle =
      cancelling && canForce
        ? "Terminate the build process now"
        : cancelling
          ? "This build's thread cannot be stopped from outside: it ends when TensorRT's current step ends"
          : st === "running"
            ? "Stop the build after the current step"
            : st === "ended"
              ? "The kernel that ran this build is gone: there is nothing to stop"
              : null;
    setAttr(this.stopBtn, "title", stopTitle);

    this.notice.hidden = !cancelling;
    const unacked = s.stopUnacked && st === "running";
    // the kernel's late answer to that Stop, once the build has ended: the click is never silently dropped
    const late = st === "running" || st === "queued" || cancelling ? "" : s.stopOutcome || "";
    this.unackedEl.hidden = !unacked && !late;
    setText(this.unackedEl, unacked ? UNACKED_STOP_TEXT : late);
    setText(this.noticeHint, cancelling ? (canForce ? FORCE_HINT : THREAD_HINT) : "");

    this.treeBtn.setAttribute("aria-pressed", String(s.mode === "tree"));
    this.tlBtn.setAttribute("aria-pressed", String(s.mode === "timeline"));
    this.engineBtn.setAttribute("aria-pressed", String(s.mode === "engine"));
    this.showEngineBtn(!!s.hasEngine);
  }

  /** @param {boolean} on */
  showEngineBtn(on) {
    this.engineBtn.style.visibility = on ? "" : "hidden";
    this.engineBtn.disabled = !on;
    setAttr(this.engineBtn, "aria-hidden", on ? null : "true");
  }

  /**
   * Live text: the clock, the ETA and the cancelling notice.
   * @param {number} now the build clock (s)
   * @param {string} status
   * @param {boolean} live
   * @param {unknown} eta the eta trait
   * @param {unknown} cancel the cancel trait
   * @param {unknown} [activity] the activity trait: {last_callback_s}
   * @param {boolean} [timed] false for a build that ended in its queue: it never started, so it shows no time
   */
  tick(now, status, live, eta, cancel, activity, timed = true) {
    // no time while queued: the build's clock restarts when a builder takes it (a count that jumps back reads wrong);
    // none for a build stopped there either: it never started
    setText(this.elapsedEl, status === "queued" || !timed ? "" : fmtDuration(now));
    this.tickEta(now, live && status !== "cancelling", eta); // a build that is stopping has no ETA
    const last = record(activity)?.last_callback_s;
    const quiet = live && typeof last === "number" ? fmtQuiet(now - last) : "";
    setText(this.quietEl, quiet);
    this.quietEl.hidden = !quiet;
    this.timingText = live ? fmtTiming(record(activity)?.timing, now) : "";
    this.renderPath();
    this.tickNotice(now, status, cancel);
  }

  /**
   * @param {number} now
   * @param {boolean} live
   * @param {unknown} etaTrait
   */
  tickEta(now, live, etaTrait) {
    const eta = record(etaTrait);
    let text = "";
    /** @type {string | null} */
    let why = null;
    if (live && eta && typeof eta.total_s === "number") {
      const basis = str(eta.based_on);
      const suffix = basis ? ` (based on ${basis})` : "";
      const left = eta.total_s - now;
      text = left > 0 ? `ETA ~${fmtApprox(left)}${suffix}` : `over ETA of ~${fmtApprox(eta.total_s)}${suffix}`;
    } else if (live && eta && str(eta.none)) {
      text = `no ETA: ${str(eta.none)}`; // said, not guessed; the reason on hover
      why = str(eta.why) || null;
    }
    setText(this.etaEl, text);
    setAttr(this.etaEl, "title", why);
    this.etaEl.hidden = !text;
  }

  /**
   * @param {number} now
   * @param {string} status
   * @param {unknown} cancelTrait
   */
  tickNotice(now, status, cancelTrait) {
    if (status !== "cancelling") return;
    const c = record(cancelTrait);
    let text = "Cancelling \u2014 waiting for the builder to finish the current step";
    if (c) {
      const phase = str(c.phase);
      if (phase) text += ` of ${phase}`;
      if (typeof c.requested_at_s === "number") text += ` (${Math.max(0, Math.floor(now - c.requested_at_s))}${NBSP}s)`;
    }
    setText(this.noticeText, text);
  }

  /**
   * The running path ("" hides it): long paths keep the first phase and the innermost three.
   * @param {{name: string, step: number, numSteps: number}[]} path
   */
  setPath(path) {
    /** @param {{name: string, step: number, numSteps: number}} p */
    const label = (p) => {
      const name = escapeControls(p.name);
      return p.numSteps > 1 ? `${name} ${Math.min(p.step, p.numSteps)}/${p.numSteps}` : name;
    };
    const parts = path.length > 4 ? [label(path[0]), "\u2026", ...path.slice(-3).map(label)] : path.map(label);
    this.pathText = parts.join(" \u203a ");
    this.renderPath();
  }

  /** The "Now" line: the running path, then what TensorRT's autotuner is timing (from its VERBOSE lines). */
  renderPath() {
    const path = this.pathText ?? "";
    const timing = this.timingText ?? "";
    const text = path && timing ? `${path} \u00b7 ${timing}` : path || timing;
    setText(this.pathEl, text ? `Now: ${text}` : "");
    this.pathEl.hidden = !text;
  }

  /** @param {string} err */
  setError(err) {
    setText(this.errorEl, escapeLines(err));
    this.errorEl.hidden = !err;
  }
}

/** Memory use: a sparkline of host RSS and GPU memory, and their peaks. */
export class ResourceView {
  constructor() {
    this.el = h("span", "trtw-res");
    this.spark = svg("svg", {
      class: "trtw-spark",
      width: 64,
      height: 16,
      viewBox: "0 0 64 16",
      "aria-hidden": "true",
    });
    this.sparkRss = svg("polyline", { class: "trtw-spark-rss" });
    this.sparkGpu = svg("polyline", { class: "trtw-spark-gpu" });
    this.spark.append(this.sparkGpu, this.sparkRss);
    this.peakEl = h("span", "trtw-peak");
    this.el.append(this.spark, this.peakEl);
  }

  /** @param {unknown} resources the resources trait: {samples: [t, rss, gpu, ...][], peak_rss, peak_gpu_mem, trt_peak, scope, gpu_scope} */
  update(resources) {
    const r = record(resources);
    if (!r) {
      this.el.hidden = true;
      return;
    }
    this.el.hidden = false;
    const samples = Array.isArray(r.samples) ? r.samples : [];
    const sel = downsample(samples.filter((s) => Array.isArray(s) && typeof s[0] === "number"));
    this.sparkRss.setAttribute("points", sparkPoints(sel, 1));
    this.sparkGpu.setAttribute("points", sparkPoints(sel, 2));
    this.spark.style.display = sel.length > 1 ? "" : "none";
    const parts = [];
    if (num(r.peak_rss) > 0) parts.push(`memory peak ${fmtBytes(r.peak_rss)}`);
    if (num(r.peak_gpu_mem) > 0) parts.push(`GPU ${fmtBytes(r.peak_gpu_mem)}`);
    setText(this.peakEl, parts.join(" \u00b7 "));
    const scope = str(r.scope) || "the build's process";
    const tip = [`Memory (RSS) of ${scope}: the line shows it over the build, the number its peak.`];
    if (num(r.peak_gpu_mem) > 0) {
      const gpuScope = str(r.gpu_scope);
      tip.push(`GPU memory${gpuScope ? ` of ${gpuScope}` : ""}: dashed line.`);
    }
    const lastSample = samples.length ? samples[samples.length - 1] : null;
    const cpu = Array.isArray(lastSample) ? lastSample[4] : null;
    if (typeof cpu === "number") tip.push(`CPU now: ${Math.round(cpu)} % (100 % = one core busy).`);
    if (r.trt_peak) tip.push(`TensorRT's own allocator peak: ${str(r.trt_peak)}.`);
    this.el.title = tip.join("\n");
  }
}

/**
 * At most ~64 of the samples, evenly spaced, always keeping the last.
 * @param {unknown[][]} pts samples whose [0] is a number (the time)
 * @returns {unknown[][]}
 */
function downsample(pts) {
  const n = pts.length;
  const step = Math.max(1, Math.ceil(n / 64));
  const sel = [];
  for (let i = 0; i < n; i += step) sel.push(pts[i]);
  if (n && sel[sel.length - 1] !== pts[n - 1]) sel.push(pts[n - 1]);
  return sel;
}

/**
 * The polyline points of column `idx` of the samples, scaled to the 64×16 sparkline ("" if all are <= 0).
 * @param {unknown[][]} sel
 * @param {number} idx
 * @returns {string}
 */
function sparkPoints(sel, idx) {
  const t0 = sel.length ? num(sel[0][0]) : 0;
  const t1 = sel.length ? num(sel[sel.length - 1][0]) : 1;
  const tw = t1 - t0 || 1;
  let max = 0;
  for (const s of sel) {
    const v = s[idx];
    if (typeof v === "number" && v > max) max = v;
  }
  if (!(max > 0)) return "";
  /** @type {string[]} */
  const out = [];
  for (const s of sel) {
    const v = s[idx];
    if (typeof v !== "number") continue;
    out.push(`${((63 * (num(s[0]) - t0)) / tw + 0.5).toFixed(1)},${(15.5 - (14 * v) / max).toFixed(1)}`);
  }
  return out.join(" ");
}

/** The collapsible TensorRT log, with error / warning counts; opens by itself on errors. */
export class LogPanel {
  constructor() {
    this.el = h("details", "trtw-logs");
    this.summary = h("summary", "trtw-logs-summary");
    this.list = h("ol", "trtw-logs-list");
    this.el.append(this.summary, this.list);
    this.count = 0; // entries rendered
    /** the expected-line reasons already written out (each is said once; later lines carry it as a tooltip) */
    this.saidWhy = new Set();
    /** the last rendered entry @type {{message: string, t: unknown, severity: string} | null} */
    this.last = null;
  }

  /**
   * @param {unknown} raw the logs trait: [{severity, message, t}, ...]
   * @param {boolean | null} userOpen the user's open/closed choice, null if none
   */
  update(raw, userOpen) {
    /** @type {unknown[]} */
    const logs = Array.isArray(raw) ? raw : [];
    // append-only fast path; rebuild when the list was replaced/shortened
    const lastRaw = this.count > 0 ? logs[this.count - 1] : null;
    const last = lastRaw ? record(lastRaw) || {} : null;
    const sameLast =
      this.count === 0 ||
      (last &&
        this.last &&
        str(last.message) === this.last.message &&
        last.t === this.last.t &&
        str(last.severity) === this.last.severity);
    if (logs.length < this.count || !sameLast) {
      this.list.replaceChildren();
      this.count = 0;
      this.saidWhy.clear();
    }
    for (let i = this.count; i < logs.length; i++) {
      const e = record(logs[i]) || {};
      const sev = str(e.severity) || "INFO";
      const expected = str(e.expected);
      const li = h("li", "trtw-log");
      li.dataset.severity = sev;
      if (expected) li.dataset.expected = "true";
      const s = h("span", "trtw-log-sev");
      s.textContent = expected ? "EXPECTED" : sev === "INTERNAL_ERROR" ? "INTERNAL" : sev;
      if (expected) s.title = `TensorRT logged this as ${sev}: ${expected}`;
      const t = h("span", "trtw-log-t trtw-mono");
      t.textContent = typeof e.t === "number" ? fmtDuration(e.t) : "";
      const m = h("span", "trtw-log-msg");
      m.textContent = escapeControls(e.message);
      li.append(s, t, m);
      if (expected && !this.saidWhy.has(expected)) {
        this.saidWhy.add(expected);
        const why = h("span", "trtw-log-why");
        why.textContent = expected;
        li.append(why);
      }
      this.list.append(li);
    }
    this.count = logs.length;
    const l = record(logs[logs.length - 1]);
    this.last = l ? { message: str(l.message), t: l.t, severity: str(l.severity) } : null;
    let errors = 0;
    let warnings = 0;
    let expected = 0;
    for (const e of logs) {
      const r = record(e);
      const s = r?.severity;
      if (r && str(r.expected)) expected++;
      else if (s === "ERROR" || s === "INTERNAL_ERROR") errors++;
      else if (s === "WARNING") warnings++;
    }
    const parts = [];
    if (errors) parts.push(`${errors} error${errors === 1 ? "" : "s"}`);
    if (warnings) parts.push(`${warnings} warning${warnings === 1 ? "" : "s"}`);
    if (expected) parts.push(`${expected} expected`);
    setText(this.summary, `TensorRT log (${logs.length})${parts.length ? `: ${parts.join(", ")}` : ""}`);
    this.el.hidden = logs.length === 0;
    this.el.dataset.errors = String(errors);
    // open automatically on errors unless the user chose otherwise
    if (userOpen === null && errors > 0 && !this.el.open) this.el.open = true;
    else if (userOpen !== null && this.el.open !== userOpen) this.el.open = userOpen;
  }
}
