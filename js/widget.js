// trt_widget front end: a live, collapsible tree (and timeline) of TensorRT
// engine-build phases with a Stop button.  Plain DOM, no framework.
//
// Contract: the Python side writes synced traits (status, status_detail,
// elapsed_s, phases (synced as the JSON text phases_json), engine_size, error, logs, cancel, can_force, eta,
// history_delta, resources); this module only reads them and sends
// {type: "stop"} when Stop is clicked.  Every trait may be missing.
//
// Security: every string coming from Python (phase names, log messages,
// errors, ...) is written with textContent or setAttribute; nothing is ever
// parsed as HTML.
//
// Collapse defaults (documented choice): phase rows start expanded so the
// whole build structure is visible; group rows ("name ×count", runs of
// >= GROUP_MIN same-name siblings such as the ~1,100 "Measuring tactic time"
// instances) start collapsed.  A user's choice is remembered per phase id /
// group key for the lifetime of the model (shared by all views of it), so it
// survives every `phases` update.

const SVGNS = "http://www.w3.org/2000/svg";
const LIVE_STATUSES = new Set(["running", "cancelling"]);
const ROW_STATUSES = new Set(["running", "done", "finished-early", "cancelled"]);
const STATUS_LABELS = {
  idle: "Idle",
  running: "Running",
  cancelling: "Cancelling",
  succeeded: "Succeeded",
  cancelled: "Cancelled",
  failed: "Failed",
};
export const GROUP_MIN = 5;
const TICK_MS = 100; // 10 Hz live ticker
const STOP_REARM_MS = 2000; // re-enable Stop if no status change follows a click
const STOP_ACK_MS = 1500; // no "cancelling" from the kernel this long after a click: say the kernel is busy
export const UNACKED_STOP_TEXT =
  "Stop has not reached the kernel: it is busy running a cell (a blocking wait(), another cell, or an " +
  "await on ipykernel 6 or marimo). Interrupt the kernel (\u25a0) to stop the build now; otherwise Stop " +
  "takes effect when the cell ends.";
const INDENT_PX = 14;
const LANE_H = 18; // timeline lane height (px)
const AXIS_H = 16; // timeline axis height (px)

// ---------------------------------------------------------------- helpers

function h(tag, cls, attrs) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  return e;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function setAttr(node, name, value) {
  if (value === null || value === undefined) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
  } else if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}

function num(v, dflt = 0) {
  return typeof v === "number" && Number.isFinite(v) ? v : dflt;
}

function str(v) {
  return v === undefined || v === null ? "" : String(v);
}

function perfNow() {
  const p = globalThis.performance;
  return p && typeof p.now === "function" ? p.now() : Date.now();
}

/** "850 ms", "12.3 s", "2m 05s", "1h 02m". */
export function fmtDuration(s) {
  if (!Number.isFinite(s) || s < 0) s = 0;
  if (s < 0.9995) return `${Math.round(s * 1000)} ms`;
  if (s < 59.95) return `${s.toFixed(1)} s`;
  if (s < 3600) {
    const m = Math.floor(s / 60);
    const r = Math.floor(s - m * 60);
    return `${m}m ${String(r).padStart(2, "0")}s`;
  }
  const hh = Math.floor(s / 3600);
  const m = Math.floor((s - hh * 3600) / 60);
  return `${hh}h ${String(m).padStart(2, "0")}m`;
}

/** Coarse duration for estimates: "12 s", "2m 05s". */
function fmtApprox(s) {
  if (!Number.isFinite(s) || s < 0) s = 0;
  if (s < 59.5) return `${Math.ceil(s)} s`;
  return fmtDuration(s);
}

/** Signed delta with a real minus sign: "+1.2 s", "−0.4 s". */
export function fmtDelta(d) {
  const sign = d > 0.05 ? "+" : d < -0.05 ? "\u2212" : "\u00b1";
  const a = Math.abs(d);
  const body = a < 59.95 ? `${a.toFixed(1)} s` : fmtDuration(a);
  return sign + body;
}

/** Binary units with one decimal: "2.4 MB". */
export function fmtBytes(n) {
  n = num(n);
  if (n < 1024) return `${Math.max(0, Math.round(n))} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

function niceStep(span, target) {
  const raw = span / Math.max(1, target);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/** Round up to a "nice" axis maximum (changes rarely as time grows). */
function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

// ------------------------------------------------------ phase structure

/**
 * Build the display structure from a `phases` array: nodes keyed by
 * String(id), children in start order, and per-parent "items" where runs of
 * >= GROUP_MIN consecutive same-name siblings are folded into one group.
 * `snapElapsed` is the snapshot's elapsed_s (for finished rows lacking end_s).
 */
export function buildStructure(phases, snapElapsed) {
  const rows = Array.isArray(phases) ? phases : [];
  const byKey = new Map();
  const nodes = [];
  for (const r of rows) {
    if (!r || typeof r !== "object") continue;
    if (r.id === undefined || r.id === null) continue;
    const key = String(r.id);
    if (byKey.has(key)) continue;
    const status = ROW_STATUSES.has(r.status) ? r.status : "running";
    const start = num(r.start_s);
    const end = typeof r.end_s === "number" && Number.isFinite(r.end_s) ? r.end_s : null;
    const running = status === "running";
    const node = {
      kind: "phase",
      key,
      name: str(r.name),
      parentKey: r.parent === undefined || r.parent === null ? null : String(r.parent),
      status,
      running,
      start,
      end,
      // finished duration (running rows are computed live instead)
      dur: running ? 0 : Math.max(0, (end !== null ? end : num(snapElapsed, start)) - start),
      stop: null, // finish time on the build clock, null while running
      step: Math.max(0, Math.floor(num(r.step))),
      numSteps: Math.max(0, Math.floor(num(r.num_steps))),
      children: null,
      items: null,
    };
    if (!running) node.stop = start + node.dur;
    byKey.set(key, node);
    nodes.push(node);
  }
  const roots = [];
  for (const n of nodes) {
    const p = n.parentKey !== null && n.parentKey !== n.key ? byKey.get(n.parentKey) : undefined;
    if (p) (p.children || (p.children = [])).push(n);
    else roots.push(n);
  }
  const groups = new Map();
  const makeItems = (parentKey, children) => {
    const items = [];
    const n = children.length;
    let i = 0;
    while (i < n) {
      let j = i;
      const name = children[i].name;
      while (j + 1 < n && children[j + 1].name === name) j++;
      if (j - i + 1 >= GROUP_MIN) {
        const members = children.slice(i, j + 1);
        const g = makeGroup(`g:${parentKey === null ? "root" : parentKey}:${members[0].key}`, name, members);
        groups.set(g.key, g);
        items.push(g);
      } else {
        for (let k = i; k <= j; k++) items.push(children[k]);
      }
      i = j + 1;
    }
    return items;
  };
  for (const n of nodes) if (n.children) n.items = makeItems(n.key, n.children);
  return { byKey, groups, nodes, items: makeItems(null, roots) };
}

function makeGroup(key, name, members) {
  let finished = 0;
  let running = 0;
  let cancelled = 0;
  let early = 0;
  let sumFinished = 0;
  let sumStartRunning = 0;
  let end = -Infinity;
  for (const m of members) {
    if (m.running) {
      running++;
      sumStartRunning += m.start;
    } else {
      finished++;
      sumFinished += m.dur;
      if (m.status === "cancelled") cancelled++;
      else if (m.status === "finished-early") early++;
      end = Math.max(end, m.start + m.dur);
    }
  }
  const status = running ? "running" : cancelled ? "cancelled" : early ? "finished-early" : "done";
  return {
    kind: "group",
    key,
    name,
    members,
    items: members,
    count: members.length,
    finished,
    running,
    cancelled,
    early,
    sumFinished,
    sumStartRunning,
    start: members[0].start,
    stop: running ? null : end,
    status,
  };
}

// ----------------------------------------------------------- tree rows

class RowView {
  constructor(key) {
    this.key = key;
    this.el = h("div", "trtw-row", { role: "treeitem", tabindex: "-1" });
    this.label = h("div", "trtw-label");
    this.twisty = h("span", "trtw-twisty", { "aria-hidden": "true" });
    this.name = h("span", "trtw-name");
    this.count = h("span", "trtw-count");
    this.mark = h("span", "trtw-mark");
    this.label.append(this.twisty, this.name, this.count, this.mark);
    this.note = h("span", "trtw-note trtw-mono");
    this.bar = h("div", "trtw-bar", { role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100" });
    this.fill = h("div", "trtw-fill");
    this.bar.append(this.fill);
    this.steps = h("span", "trtw-steps trtw-mono");
    this.pct = h("span", "trtw-pct trtw-mono");
    this.time = h("span", "trtw-time trtw-mono");
    this.el.append(this.label, this.note, this.bar, this.steps, this.pct, this.time);
    // cached rendered state; only differences touch the DOM
    this.c = {};
    this.parentKey = null;
    this.expandable = false;
    this.expanded = false;
    this.live = null; // {a, rate, eta} when the row's time is live
  }

  update(d, ctx) {
    // Plain field-by-field diffing against the cache `c` (no closures: this
    // runs for every visible row on every update).
    const it = d.item;
    const c = this.c;
    const el = this.el;
    const isGroup = it.kind === "group";
    this.parentKey = d.parentKey;
    this.expandable = d.expandable;
    this.expanded = d.expanded;
    if (c.level !== d.level) {
      c.level = d.level;
      el.setAttribute("aria-level", String(d.level));
      el.style.setProperty("--trtw-lvl", String(d.level - 1));
    }
    const exp = d.expandable ? (d.expanded ? "true" : "false") : null;
    if (c.exp !== exp) {
      c.exp = exp;
      setAttr(el, "aria-expanded", exp);
    }
    if (c.group !== isGroup) {
      c.group = isGroup;
      el.classList.toggle("trtw-group", isGroup);
    }
    if (c.status !== it.status) {
      c.status = it.status;
      el.dataset.status = it.status;
    }
    if (c.name !== it.name) {
      c.name = it.name;
      this.name.textContent = it.name;
      this.name.title = it.name;
      this.bar.setAttribute("aria-label", `${it.name} progress`);
    }
    const count = isGroup ? it.count : 0;
    if (c.count !== count) {
      c.count = count;
      this.count.textContent = isGroup ? `\u00d7${count}` : "";
    }

    let pct; // null = indeterminate
    let done; // steps (or finished members) shown as done
    let total;
    if (isGroup) {
      done = it.finished;
      total = it.count;
      pct = Math.floor((100 * done) / total);
    } else {
      total = it.numSteps;
      done = it.status === "done" ? total : Math.min(it.step, total);
      if (it.status === "done") pct = 100;
      else if (total > 0) pct = Math.floor((100 * done) / total);
      else pct = it.running ? null : 0;
    }
    if (c.pct !== pct) {
      c.pct = pct;
      this.fill.style.width = pct === null ? "0%" : `${pct}%`;
      setAttr(this.bar, "aria-valuenow", pct === null ? null : String(pct));
      this.pct.textContent = pct === null ? "" : `${pct}%`;
    }
    if (c.done !== done || c.total !== total || c.vstatus !== it.status) {
      c.done = done;
      c.total = total;
      c.vstatus = it.status;
      const stepsText = total > 0 ? `${done}/${total}` : "";
      this.steps.textContent = stepsText;
      let valueText;
      if (isGroup) valueText = `${done} of ${total} finished`;
      else if (total > 0) valueText = `${stepsText} steps`;
      else valueText = it.status === "done" ? "done" : it.running ? "running" : "0 steps";
      this.bar.setAttribute("aria-valuetext", valueText);
    }
    const cancelledN = isGroup ? it.cancelled : it.status === "cancelled" ? 1 : 0;
    const earlyN = isGroup ? it.early : it.status === "finished-early" ? 1 : 0;
    if (c.cancelledN !== cancelledN || c.earlyN !== earlyN) {
      c.cancelledN = cancelledN;
      c.earlyN = earlyN;
      let markText = "";
      if (isGroup) {
        if (cancelledN) markText = `${cancelledN} cancelled`;
        else if (earlyN) markText = `${earlyN} finished early`;
      } else if (cancelledN) markText = "cancelled";
      else if (earlyN) markText = "finished early";
      this.mark.textContent = markText;
      this.mark.hidden = !markText;
    }

    // time: live (running) or static (finished)
    if (isGroup) {
      this.live = it.running ? { a: it.sumFinished - it.sumStartRunning, rate: it.running, eta: null } : null;
    } else {
      const expected = ctx.live && it.running && ctx.eta ? ctx.eta[it.name] : undefined;
      this.live = it.running ? { a: -it.start, rate: 1, eta: typeof expected === "number" ? expected : null } : null;
    }
    let note = "";
    let noteKind = "";
    if (this.live) {
      this.tick(ctx.now);
      if (!ctx.live) this.live = null; // build over: freeze the last value
    } else {
      this.setTime(fmtDuration(isGroup ? it.sumFinished : it.dur));
      const hd = ctx.hd;
      if (hd) {
        let delta = null;
        if (isGroup) {
          for (const m of it.members) {
            const v = hd[m.key];
            if (typeof v === "number" && Number.isFinite(v)) delta = (delta || 0) + v;
          }
        } else {
          const v = hd[it.key];
          if (typeof v === "number" && Number.isFinite(v)) delta = v;
        }
        if (delta !== null) {
          note = fmtDelta(delta);
          noteKind = delta > 0.05 ? "slower" : delta < -0.05 ? "faster" : "same";
        }
      }
      this.setNote(note, noteKind);
    }
  }

  setTime(text) {
    if (this.c.time !== text) {
      this.c.time = text;
      this.time.textContent = text;
    }
  }

  setNote(text, kind) {
    if (this.c.note !== text) {
      this.c.note = text;
      this.note.textContent = text;
    }
    if (this.c.noteKind !== kind) {
      this.c.noteKind = kind;
      this.note.dataset.kind = kind;
    }
  }

  /** Refresh live text (running rows only). */
  tick(now) {
    const L = this.live;
    if (!L) return;
    const v = Math.max(0, L.a + L.rate * now);
    this.setTime(fmtDuration(v));
    if (L.eta !== null) {
      const left = L.eta - v;
      this.setNote(left >= 0.5 ? `~${fmtApprox(left)} left` : "", "eta");
    } else {
      this.setNote("", "");
    }
  }

  setTabStop(on) {
    this.el.tabIndex = on ? 0 : -1;
  }
}

// ------------------------------------------------------------- timeline

class TimelineView {
  constructor() {
    this.el = h("div", "trtw-timeline");
    this.svg = svg("svg", { class: "trtw-tl-svg", width: "100%", role: "img" });
    this.axis = svg("g", { class: "trtw-tl-axis" });
    this.barsG = svg("g", { class: "trtw-tl-bars" });
    this.nowLine = svg("line", { class: "trtw-tl-now", y1: 0, y2: 0 });
    this.svg.append(this.axis, this.barsG, this.nowLine);
    this.el.append(this.svg);
    this.bars = new Map(); // key -> {g, rect, title, text, c}
    this.axisMax = 0;
    this.height = 0;
    this.live = [];
    this.maxEnd = 0;
  }

  /** Full update from a structure (ignores collapse state). */
  update(struct, now, live) {
    const list = [];
    let maxLevel = 0;
    let maxEnd = 0;
    const visit = (items, level) => {
      for (const it of items) {
        list.push({ it, level });
        if (level > maxLevel) maxLevel = level;
        if (it.stop !== null && it.stop > maxEnd) maxEnd = it.stop;
        if (it.kind === "group") {
          for (const m of it.members) if (m.items) visit(m.items, level + 1);
        } else if (it.items) {
          visit(it.items, level + 1);
        }
      }
    };
    visit(struct.items, 0);
    this.maxEnd = maxEnd;
    this.entries = list;
    const height = AXIS_H + (list.length ? maxLevel + 1 : 1) * LANE_H + 2;
    if (height !== this.height) {
      this.height = height;
      this.svg.setAttribute("height", String(height));
      this.nowLine.setAttribute("y2", String(height));
      this.axisMax = 0; // force axis rebuild
    }
    this.svg.setAttribute("aria-label", `Timeline of ${list.length} build phases`);
    const seen = new Set();
    for (const { it, level } of list) {
      seen.add(it.key);
      let b = this.bars.get(it.key);
      if (!b) {
        b = { g: svg("svg", { class: "trtw-tl-bar", height: LANE_H - 2 }), c: {} };
        b.rect = svg("rect", { width: "100%", height: "100%", rx: 2 });
        b.title = svg("title");
        b.rect.append(b.title);
        b.text = svg("text", { x: 3, y: LANE_H - 6 });
        b.g.append(b.rect, b.text);
        this.bars.set(it.key, b);
        this.barsG.append(b.g);
      }
      b.it = it;
      const y = String(AXIS_H + level * LANE_H + 1);
      if (b.c.y !== y) b.g.setAttribute("y", (b.c.y = y));
      if (b.c.status !== it.status) b.g.setAttribute("data-status", (b.c.status = it.status));
      const label = it.kind === "group" ? `${it.name} \u00d7${it.count}` : it.name;
      if (b.c.label !== label) b.text.textContent = b.c.label = label;
    }
    for (const [key, b] of this.bars) {
      if (!seen.has(key)) {
        b.g.remove();
        this.bars.delete(key);
      }
    }
    this.layout(now, live, true);
  }

  /** Position bars; cheap enough to run on every tick while live. */
  layout(now, live, all) {
    const span = Math.max(now, this.maxEnd, 0.001);
    const axisMax = niceCeil(span * 1.02);
    const rebuildAll = all || axisMax !== this.axisMax;
    if (axisMax !== this.axisMax) {
      this.axisMax = axisMax;
      this.drawAxis();
    }
    if (!this.entries) return;
    for (const { it } of this.entries) {
      if (!rebuildAll && it.stop !== null) continue;
      const b = this.bars.get(it.key);
      const end = it.stop !== null ? it.stop : Math.max(it.start, now);
      const x = (100 * it.start) / axisMax;
      const w = Math.max(0.15, (100 * (end - it.start)) / axisMax);
      const xs = `${x.toFixed(3)}%`;
      const ws = `${w.toFixed(3)}%`;
      if (b.c.x !== xs) b.g.setAttribute("x", (b.c.x = xs));
      if (b.c.w !== ws) b.g.setAttribute("width", (b.c.w = ws));
      const dur = end - it.start;
      let title;
      if (it.kind === "group") {
        title =
          `${it.name} \u00d7${it.count}\n` +
          `span ${fmtDuration(dur)}, total ${fmtDuration(it.sumFinished + (it.running ? it.running * now - it.sumStartRunning : 0))}\n` +
          `${it.finished}/${it.count} finished` +
          (it.cancelled ? `, ${it.cancelled} cancelled` : "") +
          (it.early ? `, ${it.early} finished early` : "");
      } else {
        title =
          `${it.name}\n${fmtDuration(it.running ? dur : it.dur)}` +
          (it.numSteps > 0 ? `\nsteps ${it.status === "done" ? it.numSteps : Math.min(it.step, it.numSteps)}/${it.numSteps}` : "") +
          `\n${it.status}`;
      }
      if (b.c.title !== title) b.title.textContent = b.c.title = title;
    }
    if (live) {
      const nx = `${((100 * now) / axisMax).toFixed(3)}%`;
      this.nowLine.setAttribute("x1", nx);
      this.nowLine.setAttribute("x2", nx);
      this.nowLine.style.display = "";
    } else {
      this.nowLine.style.display = "none";
    }
  }

  drawAxis() {
    const max = this.axisMax;
    const step = niceStep(max, 6);
    const kids = [];
    for (let t = 0; t <= max + 1e-9; t += step) {
      const x = `${((100 * t) / max).toFixed(3)}%`;
      kids.push(svg("line", { x1: x, x2: x, y1: AXIS_H - 3, y2: this.height }));
      const label = svg("text", { x, y: AXIS_H - 5, "text-anchor": t === 0 ? "start" : t + step > max + 1e-9 ? "end" : "middle" });
      label.textContent = step < 1 ? `${+t.toFixed(2)}s` : t >= 60 ? fmtDuration(t) : `${+t.toFixed(1)}s`;
      kids.push(label);
    }
    this.axis.replaceChildren(...kids);
  }
}

// ----------------------------------------------------------------- view

// Per-model UI state (collapse choices, view mode) shared by all views.
const uiStateByModel = new WeakMap();
function uiStateFor(model) {
  let s = model && typeof model === "object" ? uiStateByModel.get(model) : undefined;
  if (!s) {
    s = { expanded: new Map(), mode: "tree", logsOpen: null };
    if (model && typeof model === "object") uiStateByModel.set(model, s);
  }
  return s;
}

const TRAITS = [
  "status",
  "status_detail",
  "elapsed_s",
  "phases",
  "phases_json",
  "engine_size",
  "error",
  "logs",
  "cancel",
  "can_force",
  "eta",
  "history_delta",
  "resources",
];

export class TrtView {
  constructor(model, el) {
    this.model = model;
    this.host = el;
    this.ui = uiStateFor(model);
    this.rows = new Map(); // key -> RowView (also detached ones of collapsed subtrees)
    this.rowByEl = new WeakMap();
    this.visible = []; // RowViews currently in the tree, in order
    this.liveRows = [];
    this.tabKey = null;
    this.struct = buildStructure([], 0);
    this.status = "idle";
    this.elapsed = 0;
    this.receivedAt = perfNow();
    this.mono = 0;
    this.timer = null;
    this.stopPending = false;
    this.stopTimer = null;
    this.stopUnacked = false; // a Stop click the kernel has not answered within STOP_ACK_MS
    this.ackTimer = null;
    this.logCount = 0;
    this.logLast = null;
    this.handlers = [];
    this.domHandlers = [];
    this._build();
    this._listen();
    this.refreshAll();
  }

  get(name) {
    try {
      const m = this.model;
      if (!m || typeof m.get !== "function") return undefined;
      return name === "phases" ? this._phases(m) : m.get(name);
    } catch {
      return undefined;
    }
  }

  /** The phase rows: Python syncs them as one JSON text (`phases_json`); parsed once per new text. */
  _phases(m) {
    const text = m.get("phases_json");
    if (typeof text !== "string") return m.get("phases");
    if (text !== this._phasesText) {
      this._phasesText = text;
      try {
        this._phasesParsed = JSON.parse(text);
      } catch {
        this._phasesParsed = [];
      }
    }
    return this._phasesParsed;
  }

  // -- DOM skeleton
  _build() {
    const root = (this.root = h("div", "trtw"));
    const header = h("div", "trtw-header");
    this.badge = h("span", "trtw-badge", { role: "status", "aria-live": "polite" });
    this.detail = h("span", "trtw-detail");
    this.elapsedEl = h("span", "trtw-elapsed trtw-mono", { title: "Total build time" });
    this.sizeEl = h("span", "trtw-size", { title: "Serialized engine size" });
    this.etaEl = h("span", "trtw-eta");
    this.resEl = h("span", "trtw-res");
    this.spark = svg("svg", { class: "trtw-spark", width: 64, height: 16, viewBox: "0 0 64 16", "aria-hidden": "true" });
    this.sparkRss = svg("polyline", { class: "trtw-spark-rss" });
    this.sparkGpu = svg("polyline", { class: "trtw-spark-gpu" });
    this.spark.append(this.sparkGpu, this.sparkRss);
    this.peakEl = h("span", "trtw-peak");
    this.resEl.append(this.spark, this.peakEl);
    const seg = h("span", "trtw-seg", { role: "group", "aria-label": "View" });
    this.treeBtn = h("button", "trtw-btn trtw-seg-btn", { type: "button" });
    this.treeBtn.textContent = "Tree";
    this.tlBtn = h("button", "trtw-btn trtw-seg-btn", { type: "button" });
    this.tlBtn.textContent = "Timeline";
    seg.append(this.treeBtn, this.tlBtn);
    this.stopBtn = h("button", "trtw-btn trtw-stop", { type: "button" });
    this.stopBtn.textContent = "Stop";
    const info = h("div", "trtw-info");
    info.append(this.badge, this.elapsedEl, this.sizeEl, this.etaEl, this.resEl, this.detail);
    const controls = h("div", "trtw-controls");
    controls.append(seg, this.stopBtn);
    header.append(info, controls);

    this.notice = h("div", "trtw-notice", { role: "status" });
    this.noticeText = h("span", "trtw-notice-text");
    this.noticeHint = h("span", "trtw-notice-hint");
    this.notice.append(this.noticeText, this.noticeHint);
    this.unackedEl = h("div", "trtw-unacked", { role: "alert" });
    this.unackedEl.hidden = true;
    this.errorEl = h("div", "trtw-error", { role: "alert" });

    this.body = h("div", "trtw-body");
    this.empty = h("div", "trtw-empty");
    this.treeEl = h("div", "trtw-tree", { role: "tree", "aria-label": "TensorRT build phases" });
    this.timeline = new TimelineView();
    this.body.append(this.empty, this.treeEl, this.timeline.el);

    this.logs = h("details", "trtw-logs");
    this.logsSummary = h("summary", "trtw-logs-summary");
    this.logsList = h("ol", "trtw-logs-list");
    this.logs.append(this.logsSummary, this.logsList);

    root.append(header, this.notice, this.unackedEl, this.errorEl, this.body, this.logs);
    this.host.append(root);

    this._on(this.stopBtn, "click", () => this.onStop());
    this._on(this.treeBtn, "click", () => this.setMode("tree"));
    this._on(this.tlBtn, "click", () => this.setMode("timeline"));
    this._on(this.treeEl, "click", (e) => this.onTreeClick(e));
    this._on(this.treeEl, "keydown", (e) => this.onTreeKey(e));
    this._on(this.treeEl, "focusin", (e) => {
      const rv = this._rowFromEvent(e);
      if (rv) this._setTabStop(rv.key);
    });
    this._on(this.logs, "toggle", () => {
      this.ui.logsOpen = this.logs.open;
    });
  }

  _on(target, type, fn) {
    target.addEventListener(type, fn);
    this.domHandlers.push([target, type, fn]);
  }

  _listen() {
    const m = this.model;
    if (!m || typeof m.on !== "function") return;
    const add = (trait, fn) => {
      const ev = `change:${trait}`;
      m.on(ev, fn);
      this.handlers.push([ev, fn]);
    };
    // A snapshot (elapsed_s / status / phases, usually set together) re-anchors
    // the browser clock; a status change also re-renders rows (live -> frozen).
    const snapshot = (trait) => () => {
      const prev = this.status;
      this._readClock();
      const statusChanged = this.status !== prev;
      if (statusChanged) {
        this.stopPending = false;
        this.stopUnacked = false;
      }
      if (trait === "phases" || statusChanged) this.updateTree();
      this.updateHeader();
      this.tick();
      this._syncTicker();
    };
    add("elapsed_s", snapshot("elapsed_s"));
    add("status", snapshot("status"));
    add("phases", snapshot("phases"));
    add("phases_json", snapshot("phases"));
    add("history_delta", () => this.updateTree());
    add("eta", () => this.updateTree());
    for (const t of ["status_detail", "cancel", "can_force", "engine_size"]) {
      add(t, () => {
        if (t === "can_force") this.stopPending = false;
        this.updateHeader();
      });
    }
    add("error", () => this.updateError());
    add("logs", () => this.updateLogs());
    add("resources", () => this.updateResources());
  }

  destroy() {
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

  /** Current build time in seconds (browser-extrapolated while live). */
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
    setText(this.elapsedEl, fmtDuration(now));
    this._tickEta(now);
    this._tickNotice(now);
    for (const rv of this.liveRows) rv.tick(now);
    if (this.ui.mode === "timeline" && this.isLive()) this.timeline.layout(now, true, false);
  }

  refreshAll() {
    this._readClock();
    this.updateHeader();
    this.updateError();
    this.updateLogs();
    this.updateResources();
    this.updateTree();
    this._syncTicker();
  }

  // -- header
  updateHeader() {
    const st = this.status;
    setText(this.badge, STATUS_LABELS[st] || st);
    this.badge.dataset.status = st;
    this.root.dataset.status = st;
    // A failed build's detail is the first line of its error, which the error box already shows.
    const detail = st === "failed" && str(this.get("error")) ? "" : str(this.get("status_detail"));
    setText(this.detail, detail);
    this.detail.hidden = !detail;
    const size = num(this.get("engine_size"));
    setText(this.sizeEl, size > 0 ? `engine ${fmtBytes(size)}` : "");
    this.sizeEl.hidden = !(size > 0);

    const canForce = this.get("can_force") === true;
    const cancelling = st === "cancelling";
    let enabled = st === "running" || (cancelling && canForce);
    const label = cancelling ? (canForce ? "Force stop" : "Stopping\u2026") : "Stop";
    if (this.stopPending) enabled = false;
    setText(this.stopBtn, label);
    this.stopBtn.disabled = !enabled;
    setAttr(
      this.stopBtn,
      "title",
      cancelling && canForce ? "Terminate the build process now" : st === "running" ? "Stop the build after the current step" : null,
    );

    this.notice.hidden = !cancelling;
    const unacked = this.stopUnacked && st === "running";
    this.unackedEl.hidden = !unacked;
    setText(this.unackedEl, unacked ? UNACKED_STOP_TEXT : "");
    setText(this.noticeHint, cancelling && canForce ? " Click \u201cForce stop\u201d to terminate the build process." : "");

    const mode = this.ui.mode;
    this.treeBtn.setAttribute("aria-pressed", String(mode === "tree"));
    this.tlBtn.setAttribute("aria-pressed", String(mode === "timeline"));
    const now = this.now();
    setText(this.elapsedEl, fmtDuration(now));
    this._tickEta(now);
    this._tickNotice(now);
  }

  _tickEta(now) {
    const eta = this.get("eta");
    let text = "";
    if (this.isLive() && eta && typeof eta === "object" && typeof eta.total_s === "number") {
      const basis = str(eta.based_on);
      const suffix = basis ? ` (based on ${basis})` : "";
      const left = eta.total_s - now;
      text = left > 0 ? `ETA ~${fmtApprox(left)}${suffix}` : `over ETA of ~${fmtApprox(eta.total_s)}${suffix}`;
    }
    setText(this.etaEl, text);
    this.etaEl.hidden = !text;
  }

  _tickNotice(now) {
    if (this.status !== "cancelling") return;
    const c = this.get("cancel");
    let text = "Cancelling \u2014 waiting for the builder to finish the current step";
    if (c && typeof c === "object") {
      const phase = str(c.phase);
      if (phase) text += ` of ${phase}`;
      if (typeof c.requested_at_s === "number") text += ` (${Math.max(0, Math.floor(now - c.requested_at_s))} s)`;
    }
    setText(this.noticeText, text);
  }

  onStop() {
    if (this.stopBtn.disabled) return;
    if (this.model && typeof this.model.send === "function") this.model.send({ type: "stop" });
    // Swallow double clicks until Python reports the new state (a second
    // "stop" while cancelling would mean force stop).
    this.stopPending = true;
    this.stopBtn.disabled = true;
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

  setMode(mode) {
    if (this.ui.mode === mode) return;
    this.ui.mode = mode;
    this.updateHeader();
    this.updateTree();
  }

  updateError() {
    const err = str(this.get("error"));
    setText(this.errorEl, err);
    this.errorEl.hidden = !err;
  }

  updateLogs() {
    const raw = this.get("logs");
    const logs = Array.isArray(raw) ? raw : [];
    // append-only fast path; rebuild when the list was replaced/shortened
    const last = this.logCount > 0 ? logs[this.logCount - 1] : null;
    const sameLast =
      this.logCount === 0 ||
      (last &&
        this.logLast &&
        str(last.message) === this.logLast.message &&
        last.t === this.logLast.t &&
        str(last.severity) === this.logLast.severity);
    if (logs.length < this.logCount || !sameLast) {
      this.logsList.replaceChildren();
      this.logCount = 0;
    }
    for (let i = this.logCount; i < logs.length; i++) {
      const e = logs[i] && typeof logs[i] === "object" ? logs[i] : {};
      const sev = str(e.severity) || "INFO";
      const li = h("li", "trtw-log");
      li.dataset.severity = sev;
      const s = h("span", "trtw-log-sev");
      s.textContent = sev === "INTERNAL_ERROR" ? "INTERNAL" : sev;
      const t = h("span", "trtw-log-t trtw-mono");
      t.textContent = typeof e.t === "number" ? fmtDuration(e.t) : "";
      const m = h("span", "trtw-log-msg");
      m.textContent = str(e.message);
      li.append(s, t, m);
      this.logsList.append(li);
    }
    this.logCount = logs.length;
    const l = logs[logs.length - 1];
    this.logLast = l && typeof l === "object" ? { message: str(l.message), t: l.t, severity: str(l.severity) } : null;
    let errors = 0;
    let warnings = 0;
    for (const e of logs) {
      const s = e && e.severity;
      if (s === "ERROR" || s === "INTERNAL_ERROR") errors++;
      else if (s === "WARNING") warnings++;
    }
    const parts = [];
    if (errors) parts.push(`${errors} error${errors === 1 ? "" : "s"}`);
    if (warnings) parts.push(`${warnings} warning${warnings === 1 ? "" : "s"}`);
    setText(this.logsSummary, `TensorRT log (${logs.length})${parts.length ? ": " + parts.join(", ") : ""}`);
    this.logs.hidden = logs.length === 0;
    this.logs.dataset.errors = String(errors);
    // open automatically on errors unless the user chose otherwise
    if (this.ui.logsOpen === null && errors > 0 && !this.logs.open) this.logs.open = true;
    else if (this.ui.logsOpen !== null && this.logs.open !== this.ui.logsOpen) this.logs.open = this.ui.logsOpen;
  }

  updateResources() {
    const r = this.get("resources");
    const samples = r && typeof r === "object" && Array.isArray(r.samples) ? r.samples : [];
    if (!r || typeof r !== "object") {
      this.resEl.hidden = true;
      return;
    }
    this.resEl.hidden = false;
    const pts = samples.filter((s) => Array.isArray(s) && typeof s[0] === "number");
    const n = pts.length;
    const step = Math.max(1, Math.ceil(n / 64));
    const sel = [];
    for (let i = 0; i < n; i += step) sel.push(pts[i]);
    if (n && sel[sel.length - 1] !== pts[n - 1]) sel.push(pts[n - 1]);
    const t0 = sel.length ? sel[0][0] : 0;
    const t1 = sel.length ? sel[sel.length - 1][0] : 1;
    const tw = t1 - t0 || 1;
    const line = (idx) => {
      let max = 0;
      for (const s of sel) if (typeof s[idx] === "number" && s[idx] > max) max = s[idx];
      if (!(max > 0)) return "";
      return sel
        .filter((s) => typeof s[idx] === "number")
        .map((s) => `${((63 * (s[0] - t0)) / tw + 0.5).toFixed(1)},${(15.5 - (14 * s[idx]) / max).toFixed(1)}`)
        .join(" ");
    };
    this.sparkRss.setAttribute("points", line(1));
    this.sparkGpu.setAttribute("points", line(2));
    this.spark.style.display = sel.length > 1 ? "" : "none";
    const parts = [];
    if (num(r.peak_rss) > 0) parts.push(`peak ${fmtBytes(r.peak_rss)}`);
    if (num(r.peak_gpu_mem) > 0) parts.push(`GPU ${fmtBytes(r.peak_gpu_mem)}`);
    setText(this.peakEl, parts.join(" \u00b7 "));
    const tip = ["Host RSS (solid) / GPU memory (dashed)"];
    if (r.trt_peak) tip.push(`TensorRT peak: ${str(r.trt_peak)}`);
    this.resEl.title = tip.join("\n");
  }

  // -- tree
  updateTree() {
    this.applyPhases(this.get("phases"));
  }

  /** Rebuild the structure from a phases array and reconcile the DOM. */
  applyPhases(phases) {
    this.struct = buildStructure(phases, this.elapsed);
    this.renderBody();
  }

  renderBody() {
    const s = this.struct;
    const hasRows = s.items.length > 0;
    const timeline = this.ui.mode === "timeline";
    this.empty.hidden = hasRows;
    const emptyText = this.isLive() ? "Waiting for the first build phase\u2026" : this.status === "idle" ? "No build running." : "No build phases recorded.";
    setText(this.empty, hasRows ? "" : emptyText);
    this.treeEl.hidden = timeline || !hasRows;
    this.timeline.el.hidden = !timeline || !hasRows;
    if (timeline) {
      this.liveRows = [];
      this.timeline.update(s, this.now(), this.isLive());
    } else {
      this.reconcileTree();
    }
  }

  _isExpanded(key, dflt) {
    const v = this.ui.expanded.get(key);
    return v === undefined ? dflt : v;
  }

  reconcileTree() {
    const ctx = {
      live: this.isLive(),
      now: this.now(),
      hd: this._obj(this.get("history_delta")),
      eta: this._etaPhases(),
    };
    const desired = [];
    const liveRows = [];
    const visit = (items, level, parentKey) => {
      for (const it of items) {
        const isGroup = it.kind === "group";
        const expandable = !!(it.items && it.items.length);
        const expanded = expandable && this._isExpanded(it.key, !isGroup);
        let rv = this.rows.get(it.key);
        if (!rv) {
          rv = new RowView(it.key);
          this.rows.set(it.key, rv);
          this.rowByEl.set(rv.el, rv);
        }
        rv.update({ item: it, level, parentKey, expandable, expanded }, ctx);
        if (rv.live) liveRows.push(rv);
        desired.push(rv);
        if (expanded) visit(it.items, level + 1, it.key);
      }
    };
    visit(this.struct.items, 1, null);
    this.liveRows = liveRows;

    // 1. detach rows that are no longer visible; forget rows that vanished
    const want = new Set();
    for (const rv of desired) want.add(rv);
    for (const rv of this.visible) if (!want.has(rv)) rv.el.remove();
    if (this.rows.size > desired.length) {
      const s = this.struct;
      for (const [key, rv] of this.rows) {
        if (!s.byKey.has(key) && !s.groups.has(key)) {
          rv.el.remove();
          this.rows.delete(key);
        }
      }
    }
    // 2. order: walk the container, inserting only rows that are out of place
    const parent = this.treeEl;
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
    if (this.tabKey === null || !want.has(this.rows.get(this.tabKey))) {
      this._setTabStop(desired.length ? desired[0].key : null);
    }
  }

  _obj(v) {
    return v && typeof v === "object" && !Array.isArray(v) ? v : null;
  }

  _etaPhases() {
    const eta = this._obj(this.get("eta"));
    return eta ? this._obj(eta.phases) : null;
  }

  _setTabStop(key) {
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

  _rowFromEvent(e) {
    const t = e.target;
    const rowEl = t && typeof t.closest === "function" ? t.closest(".trtw-row") : null;
    return rowEl ? this.rowByEl.get(rowEl) || null : null;
  }

  toggle(key, expand) {
    const rv = this.rows.get(key);
    if (!rv || !rv.expandable) return;
    const next = expand === undefined ? !rv.expanded : expand;
    if (next === rv.expanded) return;
    this.ui.expanded.set(key, next);
    const hadFocus = typeof document !== "undefined" && document.activeElement === rv.el;
    this.reconcileTree();
    if (hadFocus && document.activeElement !== rv.el) rv.el.focus();
  }

  _focusRow(el) {
    if (!el) return;
    const rv = this.rowByEl.get(el);
    if (!rv) return;
    this._setTabStop(rv.key);
    el.focus();
  }

  onTreeClick(e) {
    const rv = this._rowFromEvent(e);
    if (!rv) return;
    this._setTabStop(rv.key);
    const t = e.target;
    if (rv.expandable && (rv.twisty.contains(t) || rv.name.contains(t) || rv.count.contains(t))) this.toggle(rv.key);
    if (typeof document !== "undefined" && document.activeElement !== rv.el) rv.el.focus({ preventScroll: true });
  }

  onTreeKey(e) {
    const rv = this._rowFromEvent(e);
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
        else if (rv.expandable) this._focusRow(el.nextElementSibling);
        break;
      case "ArrowLeft":
        if (rv.expandable && rv.expanded) this.toggle(rv.key, false);
        else if (rv.parentKey !== null) {
          const p = this.rows.get(rv.parentKey);
          if (p) this._focusRow(p.el);
        }
        break;
      case "ArrowDown":
        this._focusRow(el.nextElementSibling);
        break;
      case "ArrowUp":
        this._focusRow(el.previousElementSibling);
        break;
      case "Home":
        this._focusRow(this.treeEl.firstElementChild);
        break;
      case "End":
        this._focusRow(this.treeEl.lastElementChild);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }
}

// ------------------------------------------------------------- exports

/** Create a view without anywidget (tests / benchmarks). */
export function createView(model, el) {
  return new TrtView(model, el);
}

/** Benchmark hook: apply one `phases` update synchronously. */
export function _applyForBench(view, phases) {
  view.applyPhases(phases);
}

export { TRAITS };

export default {
  render({ model, el }) {
    const view = new TrtView(model, el);
    return () => view.destroy();
  },
};
