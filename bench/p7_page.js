// P7 page script: renders trt_widget's bundled front end with a fake anywidget model and times updates.
// Loaded by p7_frontend.py into headless Chromium; exposes window.runBench(scenario, updates, changed).
import widget, { createView } from "/bench.js";

export class FakeModel {
  // The part of the anywidget model API the view uses: get, set, on, off, send, save_changes.
  constructor(state) {
    this.state = { ...state };
    this.handlers = new Map();
  }
  get(name) {
    return this.state[name];
  }
  set(name, value) {
    this.state[name] = value;
  }
  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, []);
    this.handlers.get(event).push(fn);
  }
  off(event, fn) {
    const list = this.handlers.get(event) || [];
    this.handlers.set(event, fn ? list.filter((f) => f !== fn) : []);
  }
  send() {}
  save_changes() {}
  // What a comm "update" message does: set every trait, then fire change:<trait> for each.
  update(changes) {
    for (const [k, v] of Object.entries(changes)) this.state[k] = v;
    for (const k of Object.keys(changes)) for (const fn of this.handlers.get(`change:${k}`) || []) fn();
    for (const fn of this.handlers.get("change") || []) fn();
  }
}

// A GPU-build-shaped tree of exactly n phase instances (TensorRT for RTX on CPU makes ~12).
function makeTree(n) {
  const rows = [];
  const add = (name, parent, numSteps) => {
    const id = rows.length;
    const depth = parent === null ? 0 : rows[parent].depth + 1;
    const start = id * 0.01;
    rows.push({ id, name, parent, depth, step: numSteps, num_steps: numSteps, start_s: start,
      end_s: start + 0.005, duration_s: 0.005, status: "done" });
    return id;
  };
  const root = add("Building engine", null, 6);
  add("Cloning network graph", root, 128);
  add("Preparing graph for optimization", root, 4);
  const sub = add("Building engine from subgraph", root, 0);
  add("Optimizing graph", sub, 30);
  const costs = add("Computing profile costs", sub, 5);
  const tactics = add("Timing tactics", costs, 3);
  const nodes = add("Timing graph nodes", tactics, 3);
  for (let l = 0; l < 100; l++) {
    const combo = add("Autotuning format combination", nodes, 10);
    for (let t = 0; t < 10; t++) add("Measuring tactic time", combo, 1);
  }
  const reformats = add("Timing tensor reformats", tactics, 3);
  while (rows.length < n - 1) add("Computing reformatting costs", reformats, 2);
  add("Determining refit engines", costs, 1);
  return rows;
}

// Update k: a window of `changed` rows flips between running and done; every row is a fresh object, as
// after JSON.parse of a comm message. `delta` holds just those rows: what the widget's pump sends (phases_delta).
function snapshot(base, k, changed) {
  const rows = JSON.parse(JSON.stringify(base));
  const first = 8 + ((k * changed) % (rows.length - 8 - changed));
  for (let i = first; i < first + changed; i++) {
    const r = rows[i];
    if (k % 2 === 0) {
      r.status = "running";
      r.step = Math.floor(r.num_steps / 2);
      r.end_s = null;
      r.duration_s = null;
    } else {
      r.end_s = r.start_s + 0.004 + k * 1e-4;
      r.duration_s = r.end_s - r.start_s;
    }
  }
  return { rows, delta: rows.slice(first, first + changed) };
}

const frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

window.runBench = async (scenario, n, updates, changed) => {
  document.body.innerHTML = "";
  const el = document.createElement("div");
  el.style.width = "900px";
  document.body.append(el);
  const base = makeTree(n);
  const model = new FakeModel({ status: "running", status_detail: "", elapsed_s: 1, phases_json: JSON.stringify(snapshot(base, 0, changed).rows), phases_seq: 0,
    engine_size: 0, error: "", logs: [], cancel: null, can_force: false, eta: null, history_delta: null,
    resources: null });
  let view = null;
  let cleanup = null;
  if (scenario === "tree") {
    cleanup = widget.render({ model, el }); // the anywidget entry point
  } else {
    view = createView(model, el); // the bundle's test hook, to drive the UI state below
    if (scenario === "expanded") {
      for (let pass = 0; pass < 10; pass++) {
        const closed = view.tree.visible.filter((rv) => rv.expandable && !rv.expanded);
        if (!closed.length) break;
        for (const rv of closed) view.tree.toggle(rv.key, true);
      }
    } else if (scenario === "timeline") {
      view.setMode("timeline");
    }
  }
  void el.offsetHeight;
  await frame();
  const times = [];
  const scripting = [];
  const parse = [];
  const warmup = 5;
  for (let k = 1; k <= updates + warmup; k++) {
    const { delta } = snapshot(base, k, changed);
    const text = JSON.stringify({ seq: k, rows: delta });
    const p0 = performance.now();
    JSON.parse(text); // what the view's own parse costs, reported apart (it is inside the timed update too)
    parse.push(performance.now() - p0);
    const t0 = performance.now();
    model.update({ elapsed_s: 1 + k * 0.1, phases_delta: text });
    const t1 = performance.now();
    void el.offsetHeight; // forced layout is part of applying the update
    const t = performance.now() - t0;
    if (k > warmup) {
      times.push(t);
      scripting.push(t1 - t0);
    }
    await frame();
  }
  const rowsInDom = scenario === "timeline"
    ? el.querySelectorAll(".trtw-tl-bars > *").length // timeline bars
    : el.querySelectorAll('[role="treeitem"]').length;
  if (cleanup) cleanup();
  else view.destroy();
  return { times, scripting, parse, rowsInDom, bytes: JSON.stringify(base).length };
};
window.benchReady = true;
