// Shared by the build view's tests: a fake anywidget model, phase rows, mounting the widget, DOM queries.
import { afterEach, beforeEach, vi } from "vitest";
import widget from "../src/build/widget.js";

// ------------------------------------------------------------ fake model

/**
 * Python syncs the phase rows as one JSON text, `phases_json`: a `rows` entry of a fake model's state (or of
 * a set/update) is stored as `phases_json: JSON.stringify(rows)`, the only form the view reads.
 */
function encodeRows(patch) {
  if (!("rows" in patch)) return patch;
  const { rows, ...rest } = patch;
  return { ...rest, phases_json: JSON.stringify(rows) };
}

/** Minimal anywidget/Backbone-like model: get/set/on/off/send/save_changes. */
export function fakeModel(init = {}) {
  const state = encodeRows(init);
  const listeners = new Map();
  const emit = (ev, ...args) => {
    for (const cb of [...(listeners.get(ev) || [])]) cb(...args);
  };
  return {
    sent: [],
    saved: 0,
    get: (k) => state[k],
    set(key, value) {
      const [[k, v]] = Object.entries(encodeRows({ [key]: value }));
      const changed = state[k] !== v;
      state[k] = v;
      if (changed) emit(`change:${k}`);
    },
    /** set several traits at once, then fire their change events (like set_state). */
    update(changes) {
      const patch = encodeRows(changes);
      const changed = Object.keys(patch).filter((k) => state[k] !== patch[k]);
      Object.assign(state, patch);
      for (const k of changed) emit(`change:${k}`);
    },
    save_changes() {
      this.saved++;
    },
    on(ev, cb) {
      if (!listeners.has(ev)) listeners.set(ev, []);
      listeners.get(ev).push(cb);
    },
    off(ev, cb) {
      const l = listeners.get(ev) || [];
      const i = l.indexOf(cb);
      if (i >= 0) l.splice(i, 1);
    },
    send(msg) {
      this.sent.push(msg);
    },
    /** fire a model event that is not a trait change (comm_live_update, comm:close) */
    trigger(ev) {
      emit(ev);
    },
    /** a custom message from Python (widget.send) */
    receive(msg) {
      emit("msg:custom", msg, []);
    },
    listenerCount() {
      let n = 0;
      for (const l of listeners.values()) n += l.length;
      return n;
    },
  };
}

/** A row of the matrix view's rows_json: a running build with a phase, unless `extra` says otherwise. */
export const matrixRow = (id, extra = {}) => ({
  id,
  model: "resnet.onnx",
  variant: `optimization_level=${id}`,
  status: "running",
  detail: "",
  elapsed_s: 1.5,
  engine_size: 0,
  error: "",
  phase: { name: "Timing tactics", step: 3, num_steps: 10 },
  can_force: true,
  ...extra,
});

let nextId = 0;
export function phase(name, opts = {}) {
  return {
    id: opts.id ?? nextId++,
    name,
    parent: opts.parent ?? null,
    depth: opts.depth ?? 0,
    step: opts.step ?? 0,
    num_steps: opts.num_steps ?? 0,
    start_s: opts.start_s ?? 0,
    end_s: opts.end_s === undefined ? null : opts.end_s,
    status: opts.status ?? (opts.end_s === undefined || opts.end_s === null ? "running" : "done"),
  };
}

// ----------------------------------------------------------- DOM helpers

export let el;
let cleanup;
/** Run the view's clean-up now (as anywidget does when the view goes away). */
export function unmount() {
  if (cleanup) cleanup();
  cleanup = null;
}

export function mount(model) {
  el = document.createElement("div");
  document.body.append(el);
  cleanup = widget.render(/** @type {any} */ ({ model, el }));
  // every render says so once (tested below); the tests look at what the view sends afterwards
  if (Array.isArray(model.sent)) model.sent = model.sent.filter((m) => m.type !== "view");
  return el;
}
export const rows = () => [...el.querySelectorAll('[role="treeitem"]')];
export const rowNamed = (name) => rows().find((r) => r.querySelector(".trtw-name").textContent === name);
export const txt = (row, cls) => row.querySelector(cls).textContent;
export const stopBtn = () => el.querySelector("button.trtw-stop");

/** Register the per-test reset and clean-up (call once at the top of a test file). */
export function useDom() {
  beforeEach(() => {
    nextId = 0;
  });
  afterEach(() => {
    if (cleanup) cleanup();
    cleanup = null;
    if (el) el.remove();
    el = null;
    vi.useRealTimers();
    vi.restoreAllMocks();
  });
}

// A small realistic build: root > [parse, build > [tactics..., fuse]]
export function sampleTree() {
  return [
    phase("Building engine", { id: 1, depth: 0, step: 1, num_steps: 4, start_s: 0 }),
    phase("Parsing network", { id: 2, parent: 1, depth: 1, step: 3, num_steps: 10, start_s: 0.1, end_s: 0.6 }),
    phase("Optimizing", { id: 3, parent: 1, depth: 1, step: 1, num_steps: 4, start_s: 0.7 }),
    phase("Fusing layers", { id: 4, parent: 3, depth: 2, step: 2, num_steps: 8, start_s: 0.8 }),
  ];
}

/** The no-break space every formatted value joins its number and unit with ("850\u00a0ms": never wrapped apart). */
export const NB = "\u00a0";
