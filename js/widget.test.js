// @vitest-environment jsdom
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TrtView } from "./src/build/view.js";
import widget from "./src/build/widget.js";
import { fmtBytes, fmtDelta, fmtDuration, fmtQuiet, meaningfulDelta, niceCeil, percent } from "./src/shared/format.js";

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
function fakeModel(init = {}) {
  const state = encodeRows(init);
  const listeners = new Map();
  const emit = (ev) => {
    for (const cb of [...(listeners.get(ev) || [])]) cb();
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
    listenerCount() {
      let n = 0;
      for (const l of listeners.values()) n += l.length;
      return n;
    },
  };
}

let nextId = 0;
function phase(name, opts = {}) {
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

let el;
let cleanup;
function mount(model) {
  el = document.createElement("div");
  document.body.append(el);
  cleanup = widget.render(/** @type {any} */ ({ model, el }));
  return el;
}
const rows = () => [...el.querySelectorAll('[role="treeitem"]')];
const rowNamed = (name) => rows().find((r) => r.querySelector(".trtw-name").textContent === name);
const txt = (row, cls) => row.querySelector(cls).textContent;
const stopBtn = () => el.querySelector("button.trtw-stop");

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

// A small realistic build: root > [parse, build > [tactics..., fuse]]
function sampleTree() {
  return [
    phase("Building engine", { id: 1, depth: 0, step: 1, num_steps: 4, start_s: 0 }),
    phase("Parsing network", { id: 2, parent: 1, depth: 1, step: 3, num_steps: 10, start_s: 0.1, end_s: 0.6 }),
    phase("Optimizing", { id: 3, parent: 1, depth: 1, step: 1, num_steps: 4, start_s: 0.7 }),
    phase("Fusing layers", { id: 4, parent: 3, depth: 2, step: 2, num_steps: 8, start_s: 0.8 }),
  ];
}

// ---------------------------------------------------------------- tests

describe("formatters", () => {
  it("formats durations, deltas and sizes", () => {
    expect(fmtDuration(0.25)).toBe("250 ms");
    expect(fmtDuration(12.34)).toBe("12.3 s");
    expect(fmtDuration(125)).toBe("2m 05s");
    expect(fmtDuration(3720)).toBe("1h 02m");
    expect(fmtDelta(1.23)).toBe("+1.2 s");
    expect(fmtDelta(-0.4)).toBe("\u2212400 ms"); // the units durations use
    expect(fmtBytes(2.4 * 1024 * 1024)).toBe("2.4 MiB"); // binary units, named as such (as the CLI)
    expect(fmtBytes(97.9 * 1024 * 1024)).toBe("97.9 MiB");
    expect(fmtBytes(1023.99 * 1024)).toBe("1.0 MiB"); // never "1024.0 KiB"
    expect(fmtBytes(512)).toBe("512 B");
  });

  it("rounds percentages but says 100 % only when complete and 0 % only when nothing is done", () => {
    expect(percent(2, 3)).toBe(67);
    expect(percent(1, 3)).toBe(33);
    expect(percent(999, 1000)).toBe(99);
    expect(percent(1, 1000)).toBe(1);
    expect(percent(0, 3)).toBe(0);
    expect(percent(3, 3)).toBe(100);
    expect(percent(1, 0)).toBe(0);
  });

  it("shows a delta only when it is at least 0.1 s and 5 % of the phase's time", () => {
    expect(meaningfulDelta(0.05, 0.2)).toBe(false); // 50 ms: noise
    expect(meaningfulDelta(0.2, 100)).toBe(false); // 0.2 % of a long phase
    expect(meaningfulDelta(0.5, 2)).toBe(true);
    expect(meaningfulDelta(-0.5, 2)).toBe(true);
  });

  it("ends the timeline axis close past the build: 16.3 s -> 18 s, not 20 s", () => {
    expect(niceCeil(16.32)).toBe(18);
    expect(niceCeil(0.95)).toBe(1);
    for (const x of [0.013, 1.05, 7.7, 16.32, 123, 4321]) expect(niceCeil(x) / x).toBeLessThanOrEqual(1.2);
  });

  it("says how long TensorRT has been silent only once it matters", () => {
    expect(fmtQuiet(1.2)).toBe("");
    expect(fmtQuiet(4.9)).toBe("");
    expect(fmtQuiet(12.7)).toBe("no callback for 12 s");
    expect(fmtQuiet(125)).toBe("no callback for 2m 05s");
  });
});

describe("tree rendering", () => {
  it("reads the rows from the phases_json text Python syncs, keeping row nodes across updates", () => {
    const tree = sampleTree();
    const model = fakeModel({ status: "running", elapsed_s: 1, phases_json: JSON.stringify(tree) });
    mount(model);
    expect(rows()).toHaveLength(tree.length);
    const first = rowNamed("Fusing layers");
    const moved = tree.map((r) => (r.name === "Fusing layers" ? { ...r, step: 4 } : r));
    model.set("phases_json", JSON.stringify(moved));
    expect(rowNamed("Fusing layers")).toBe(first);
    expect(txt(first, ".trtw-steps")).toBe("4/8");
    model.set("phases_json", "not json");
    expect(rows()).toHaveLength(0);
  });

  it("applies row deltas and asks for the whole list once when it missed some", () => {
    const tree = sampleTree();
    const model = fakeModel({ status: "running", elapsed_s: 1, phases_json: JSON.stringify(tree), phases_seq: 4 });
    mount(model);
    const before = rows();
    model.set("phases_delta", JSON.stringify({ seq: 5, rows: [{ ...tree[3], step: 5 }] }));
    expect(rows()[3]).toBe(before[3]); // the same node, updated
    expect(txt(rows()[3], ".trtw-steps")).toBe(`5/${tree[3].num_steps}`);
    expect(model.sent).toEqual([]);
    model.set("phases_delta", JSON.stringify({ seq: 9, rows: [{ ...tree[3], step: 6 }] })); // 6..8 missed
    model.set("elapsed_s", 1.5);
    expect(model.sent).toEqual([{ type: "sync" }]); // asked once
    model.update({ phases_json: JSON.stringify([...tree.slice(0, 3), { ...tree[3], step: 7 }]), phases_seq: 9 });
    expect(txt(rows()[3], ".trtw-steps")).toBe(`7/${tree[3].num_steps}`);
  });

  it("ignores a `phases` list (Python syncs only phases_json)", () => {
    const model = fakeModel({ status: "succeeded", elapsed_s: 1, phases: sampleTree() });
    mount(model);
    expect(model.get("phases_json")).toBeUndefined();
    expect(rows()).toHaveLength(0);
    expect(el.querySelector(".trtw-empty").textContent).toBe("No build phases recorded.");
  });

  it("renders one treeitem per phase with nesting, n/N and %", () => {
    mount(fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() }));
    const tree = el.querySelector('[role="tree"]');
    expect(tree).not.toBeNull();
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual([
      "Building engine",
      "Parsing network",
      "Optimizing",
      "Fusing layers",
    ]);
    expect(rows().map((r) => r.getAttribute("aria-level"))).toEqual(["1", "2", "2", "3"]);
    const fuse = rowNamed("Fusing layers");
    expect(fuse.style.getPropertyValue("--trtw-lvl")).toBe("2");
    expect(txt(fuse, ".trtw-steps")).toBe("2/8");
    expect(txt(fuse, ".trtw-pct")).toBe("25%");
    const bar = fuse.querySelector('[role="progressbar"]');
    expect(bar.getAttribute("aria-valuenow")).toBe("25");
    expect(bar.getAttribute("aria-valuemin")).toBe("0");
    expect(bar.getAttribute("aria-valuemax")).toBe("100");
    expect(bar.getAttribute("aria-label")).toBe("Fusing layers progress");
    expect(fuse.querySelector(".trtw-fill").style.width).toBe("25%");
    // expandable rows carry aria-expanded, leaves do not
    expect(rowNamed("Building engine").getAttribute("aria-expanded")).toBe("true");
    expect(fuse.hasAttribute("aria-expanded")).toBe(false);
  });

  it("shows 100% for done phases even if step < num_steps, and with num_steps 0", () => {
    mount(
      fakeModel({
        status: "succeeded",
        elapsed_s: 3,
        rows: [
          phase("A", { id: 1, step: 3, num_steps: 10, start_s: 0, end_s: 1.5 }),
          phase("B", { id: 2, step: 0, num_steps: 0, start_s: 1.5, end_s: 2 }),
        ],
      }),
    );
    const a = rowNamed("A");
    expect(txt(a, ".trtw-pct")).toBe("100%");
    expect(txt(a, ".trtw-steps")).toBe("10/10");
    expect(a.querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(a, ".trtw-time")).toBe("1.5 s");
    const b = rowNamed("B");
    expect(txt(b, ".trtw-pct")).toBe("100%");
    expect(b.querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(b, ".trtw-time")).toBe("500 ms");
  });

  it("draws a phase TensorRT ended before its last step as done, marks cancelled ones, keeps both visible", () => {
    mount(
      fakeModel({
        status: "cancelled",
        status_detail: "stopped by user",
        elapsed_s: 5,
        rows: [
          phase("Early", { id: 1, step: 2, num_steps: 5, start_s: 0, end_s: 1, status: "finished-early" }),
          phase("Cut", { id: 2, step: 1, num_steps: 4, start_s: 1, end_s: 5, status: "cancelled" }),
        ],
      }),
    );
    expect(txt(rowNamed("Early"), ".trtw-mark")).toBe("");
    expect(rowNamed("Early").querySelector(".trtw-mark").hidden).toBe(true);
    expect(txt(rowNamed("Early"), ".trtw-pct")).toBe("100%");
    expect(txt(rowNamed("Early"), ".trtw-steps")).toBe("2/5"); // the true count ...
    expect(rowNamed("Early").querySelector(".trtw-steps").title).toMatch(/normal, not an error/); // ... explained
    expect(rowNamed("Early").querySelector(".trtw-fill").style.width).toBe("100%");
    expect(txt(rowNamed("Cut"), ".trtw-mark")).toBe("cancelled");
    expect(rowNamed("Cut").dataset.status).toBe("cancelled");
    expect(el.querySelector(".trtw-badge").textContent).toBe("Cancelled");
    expect(el.querySelector(".trtw-detail").textContent).toBe("stopped by user");
  });

  it("survives a model with no traits at all", () => {
    mount(fakeModel({}));
    expect(rows()).toHaveLength(0);
    expect(el.querySelector(".trtw-badge").textContent).toBe("Idle");
    expect(stopBtn().disabled).toBe(true);
    expect(el.querySelector(".trtw-empty").textContent).toBe("No build running.");
  });
});

describe("grouping", () => {
  function tactics(n, { running = false } = {}) {
    const out = [phase("Build", { id: 100, depth: 0, start_s: 0 })];
    for (let i = 0; i < n; i++) {
      const last = running && i === n - 1;
      out.push(
        phase("Measuring tactic time", {
          id: 200 + i,
          parent: 100,
          depth: 1,
          step: last ? 0 : 1,
          num_steps: 1,
          start_s: i,
          end_s: last ? null : i + 0.5,
        }),
      );
    }
    out.push(phase("Other", { id: 300, parent: 100, depth: 1, start_s: n, end_s: n + 1 }));
    return out;
  }

  it("folds >= 5 same-name siblings into one collapsed group row with ×count and total", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 10, rows: tactics(6) }));
    const names = rows().map((r) => r.querySelector(".trtw-name").textContent);
    expect(names).toEqual(["Build", "Measuring tactic time", "Other"]);
    const g = rowNamed("Measuring tactic time");
    expect(g.classList.contains("trtw-group")).toBe(true);
    expect(txt(g, ".trtw-count")).toBe("\u00d76");
    expect(txt(g, ".trtw-time")).toBe("3.0 s"); // 6 × 0.5 s
    expect(g.querySelector(".trtw-time").title).toBe("6 instances: 3.0 s in total, 500 ms on average");
    expect(txt(g, ".trtw-steps")).toBe(""); // the ×6 says it; no % for a group: it cannot know its total
    expect(txt(g, ".trtw-pct")).toBe("");
    expect(g.querySelector(".trtw-bar").style.visibility).toBe("hidden");
    expect(g.getAttribute("aria-expanded")).toBe("false");
  });

  it("expands to show its members and keeps its key stable while the run grows", () => {
    const model = fakeModel({ status: "running", elapsed_s: 5.2, rows: tactics(6, { running: true }) });
    mount(model);
    const g = rowNamed("Measuring tactic time");
    expect(txt(g, ".trtw-steps")).toBe("5 done");
    expect(txt(g, ".trtw-pct")).toBe("");
    expect(txt(g, ".trtw-time")).toBe("2.7 s"); // 5 × 0.5 + (5.2 − 5) live
    // collapsed, the group still shows its running member inline: where the build is is never hidden
    const inline = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(inline).toHaveLength(1);
    expect(inline[0].dataset.status).toBe("running");
    g.querySelector(".trtw-twisty").click();
    expect(g.getAttribute("aria-expanded")).toBe("true");
    let members = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(members).toHaveLength(6);
    expect(members.every((m) => m.querySelector(".trtw-name").textContent === "Measuring tactic time")).toBe(true);

    model.update({ elapsed_s: 6.5, rows: tactics(7, { running: true }) });
    expect(rowNamed("Measuring tactic time")).toBe(g); // same group row node
    expect(txt(g, ".trtw-count")).toBe("\u00d77");
    expect(g.getAttribute("aria-expanded")).toBe("true"); // state kept
    members = rows().filter((r) => r.getAttribute("aria-level") === "3");
    expect(members).toHaveLength(7);
  });

  it("opens a group that forms around a member the user had opened", () => {
    const four = tactics(4, { running: true });
    const model = fakeModel({ status: "running", elapsed_s: 4, rows: four });
    mount(model);
    const member = rows().find((r) => r.querySelector(".trtw-name").textContent === "Measuring tactic time");
    const memberId = four.find((r) => r.name === "Measuring tactic time").id;
    model.update({ rows: four.map((r) => (r.parent === memberId ? r : r)) });
    member.querySelector(".trtw-label").click(); // a member without children: nothing to open
    const view = new TrtView(model, document.createElement("div"));
    view.tree.expanded.set(String(memberId), true); // as if the user had opened it
    model.update({ elapsed_s: 6, rows: tactics(6, { running: true }) });
    view.updateTree();
    const g = [...view.tree.el.querySelectorAll(".trtw-group")][0];
    expect(g.getAttribute("aria-expanded")).toBe("true");
    view.destroy();
  });

  it("pins where the build is in the header and reveals it in the tree on click", () => {
    const rowsNow = [
      phase("Building engine", { id: 0, step: 4, num_steps: 6 }),
      phase("Timing graph nodes", { id: 1, parent: 0, depth: 1, step: 0, num_steps: 1 }),
    ];
    for (let i = 0; i < 8; i++) {
      rowsNow.push(
        phase("Evaluating tactic times", {
          id: 2 + i,
          parent: 1,
          depth: 2,
          start_s: i,
          ...(i < 7 ? { end_s: i + 0.9, status: "done", step: 20, num_steps: 20 } : { step: 55, num_steps: 153 }),
        }),
      );
    }
    rowsNow.push(phase("Measuring tactic time", { id: 10, parent: 9, depth: 3, start_s: 7.5, step: 1, num_steps: 4 }));
    const model = fakeModel({ status: "running", elapsed_s: 8, rows: rowsNow });
    mount(model);
    const path = el.querySelector(".trtw-path");
    expect(path.hidden).toBe(false);
    expect(path.textContent).toBe(
      "Now: Building engine 4/6 \u203a Timing graph nodes \u203a Evaluating tactic times 55/153 \u203a Measuring tactic time 1/4",
    );
    rowNamed("Timing graph nodes").querySelector(".trtw-label").click(); // the user closes the running branch
    expect(rowNamed("Measuring tactic time")).toBeUndefined();
    path.click();
    expect(rowNamed("Measuring tactic time").dataset.status).toBe("running");
    model.update({ status: "succeeded", rows: rowsNow.map((r) => ({ ...r, status: "done", end_s: 9 })) });
    expect(path.hidden).toBe(true);
  });

  it("does not group runs shorter than 5", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 10, rows: tactics(4) }));
    expect(rows()).toHaveLength(6);
    expect(el.querySelector(".trtw-group")).toBeNull();
  });
});

describe("collapse state", () => {
  it("is kept across phases updates", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    const opt = rowNamed("Optimizing");
    opt.querySelector(".trtw-twisty").click();
    expect(opt.getAttribute("aria-expanded")).toBe("false");
    expect(rowNamed("Fusing layers")).toBeUndefined();

    const next = sampleTree();
    next.push(phase("Selecting tactics", { id: 5, parent: 3, depth: 2, start_s: 1.2 }));
    next.push(phase("Serializing", { id: 6, parent: 1, depth: 1, start_s: 1.3 }));
    model.update({ elapsed_s: 1.4, rows: next });
    expect(rowNamed("Optimizing")).toBe(opt);
    expect(opt.getAttribute("aria-expanded")).toBe("false");
    expect(rowNamed("Fusing layers")).toBeUndefined();
    expect(rowNamed("Selecting tactics")).toBeUndefined();
    expect(rowNamed("Serializing")).toBeDefined();

    opt.querySelector(".trtw-name").click();
    expect(opt.getAttribute("aria-expanded")).toBe("true");
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual([
      "Building engine",
      "Parsing network",
      "Optimizing",
      "Fusing layers",
      "Selecting tactics",
      "Serializing",
    ]);
  });

  it("is operable from the keyboard (Enter/Space, ArrowLeft/Right, ArrowUp/Down)", () => {
    mount(fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() }));
    const root = rowNamed("Building engine");
    expect(root.tabIndex).toBe(0); // roving tab stop on the first row
    expect(rowNamed("Optimizing").tabIndex).toBe(-1);
    const key = (target, k) => target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
    root.focus();
    key(root, "ArrowLeft");
    expect(root.getAttribute("aria-expanded")).toBe("false");
    expect(rows()).toHaveLength(1);
    key(root, "ArrowRight");
    expect(root.getAttribute("aria-expanded")).toBe("true");
    expect(rows()).toHaveLength(4);
    key(root, "Enter");
    expect(root.getAttribute("aria-expanded")).toBe("false");
    key(root, " ");
    expect(root.getAttribute("aria-expanded")).toBe("true");
    key(root, "ArrowDown");
    expect(document.activeElement).toBe(rowNamed("Parsing network"));
    expect(rowNamed("Parsing network").tabIndex).toBe(0);
    expect(root.tabIndex).toBe(-1);
    key(document.activeElement, "ArrowDown");
    key(document.activeElement, "ArrowDown");
    expect(document.activeElement).toBe(rowNamed("Fusing layers"));
    key(document.activeElement, "ArrowLeft"); // leaf: move to parent
    expect(document.activeElement).toBe(rowNamed("Optimizing"));
    key(document.activeElement, "ArrowUp");
    expect(document.activeElement).toBe(rowNamed("Parsing network"));
  });
});

describe("stop button", () => {
  it("sends exactly {type:'stop'} on click and swallows repeated clicks", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    const b = stopBtn();
    expect(b.tagName).toBe("BUTTON");
    expect(b.disabled).toBe(false);
    expect(b.textContent).toBe("Stop");
    b.click();
    b.click();
    b.click();
    expect(model.sent).toEqual([{ type: "stop" }]);
    expect(b.disabled).toBe(true);
  });

  it.each(["idle", "succeeded", "failed", "cancelled"])("is disabled and hidden when status is %s", (status) => {
    const model = fakeModel({ status, elapsed_s: 1 });
    mount(model);
    expect(stopBtn().disabled).toBe(true);
    expect(stopBtn().hidden).toBe(true); // nothing to stop: no control that cannot be used
    stopBtn().click();
    expect(model.sent).toEqual([]);
  });

  it("says a queued build waits for a builder and lets Stop end the wait", () => {
    const model = fakeModel({ status: "queued", elapsed_s: 0 });
    mount(model);
    expect(el.querySelector(".trtw-badge").textContent).toBe("Queued");
    expect(el.querySelector(".trtw-empty").textContent).toMatch(/waiting for a free builder/);
    expect(stopBtn().hidden).toBe(false);
    stopBtn().click();
    expect(model.sent).toEqual([{ type: "stop" }]);
  });

  it("hides the Tree/Timeline switch while there are no phases (a build that failed at once)", () => {
    const model = fakeModel({ status: "failed", elapsed_s: 0.002, error: "not an ONNX file" });
    mount(model);
    expect(el.querySelector(".trtw-seg").hidden).toBe(true);
    model.update({ rows: sampleTree() });
    expect(el.querySelector(".trtw-seg").hidden).toBe(false);
  });

  it("becomes 'Force stop' while cancelling with can_force", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1 });
    mount(model);
    stopBtn().click();
    model.update({ status: "cancelling", cancel: { phase: "Optimizing", requested_at_s: 1 }, can_force: false });
    expect(stopBtn().disabled).toBe(true);
    expect(stopBtn().textContent).not.toBe("Force stop");
    model.set("can_force", true);
    expect(stopBtn().disabled).toBe(false);
    expect(stopBtn().textContent).toBe("Force stop");
    stopBtn().click();
    expect(model.sent).toEqual([{ type: "stop" }, { type: "stop" }]);
    model.update({ status: "cancelled", can_force: false });
    expect(stopBtn().disabled).toBe(true);
    expect(stopBtn().textContent).toBe("Stop");
  });
});

describe("unanswered stop", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const unacked = () => /** @type {HTMLElement} */ (document.querySelector(".trtw-unacked"));

  it("says the kernel is busy when no 'cancelling' arrives within 1.5 s of a click", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    stopBtn().click();
    vi.advanceTimersByTime(1400);
    expect(unacked().hidden).toBe(true);
    vi.advanceTimersByTime(200);
    expect(unacked().hidden).toBe(false);
    expect(unacked().textContent).toContain("Stop has not reached the kernel");
    expect(unacked().textContent).toContain("Interrupt the kernel");
    model.update({ status: "succeeded" });
    expect(unacked().hidden).toBe(true);
  });

  it("stays quiet when the kernel acknowledges the stop in time", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    stopBtn().click();
    vi.advanceTimersByTime(300);
    model.update({ status: "cancelling", cancel: { phase: "Optimizing", requested_at_s: 1 } });
    vi.advanceTimersByTime(5000);
    expect(unacked().hidden).toBe(true);
  });
});

describe("live clock", () => {
  let clock;
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 1000;
    vi.spyOn(performance, "now").mockImplementation(() => clock);
  });
  const advance = (ms) => {
    clock += ms;
    vi.advanceTimersByTime(ms);
  };

  it("ticks header and running rows between snapshots and stops when done", () => {
    const model = fakeModel({
      status: "running",
      elapsed_s: 2,
      rows: [
        phase("Build", { id: 1, start_s: 0 }),
        phase("Parse", { id: 2, parent: 1, start_s: 0, end_s: 1 }),
        phase("Tactics", { id: 3, parent: 1, start_s: 1, step: 1, num_steps: 2 }),
      ],
    });
    mount(model);
    const elapsed = el.querySelector(".trtw-elapsed");
    expect(elapsed.textContent).toBe("2.0 s");
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe("1.0 s");
    advance(1500);
    expect(elapsed.textContent).toBe("3.5 s");
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe("2.5 s");
    expect(txt(rowNamed("Build"), ".trtw-time")).toBe("3.5 s");
    expect(txt(rowNamed("Parse"), ".trtw-time")).toBe("1.0 s"); // finished: static

    // a new snapshot re-anchors the clock
    model.update({ elapsed_s: 3.6 });
    expect(elapsed.textContent).toBe("3.6 s");
    advance(400);
    expect(elapsed.textContent).toBe("4.0 s");
    expect(vi.getTimerCount()).toBe(1);

    model.update({
      status: "succeeded",
      elapsed_s: 4.2,
      engine_size: Math.round(2.4 * 1024 * 1024),
      rows: [
        phase("Build", { id: 1, start_s: 0, end_s: 4.2 }),
        phase("Parse", { id: 2, parent: 1, start_s: 0, end_s: 1 }),
        phase("Tactics", { id: 3, parent: 1, start_s: 1, end_s: 4.1, step: 2, num_steps: 2 }),
      ],
    });
    expect(vi.getTimerCount()).toBe(0); // ticker stopped
    expect(el.querySelector(".trtw-quiet").hidden).toBe(true);
    advance(2000);
    expect(elapsed.textContent).toBe("4.2 s");
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe("3.1 s");
    expect(el.querySelector(".trtw-size").textContent).toBe("engine 2.4 MiB");
  });

  it("says how long TensorRT has been silent during a long step", () => {
    const model = fakeModel({
      status: "running",
      elapsed_s: 20,
      activity: { last_callback_s: 18 },
      rows: [phase("Build", { id: 1, start_s: 0 })],
    });
    mount(model);
    const quiet = el.querySelector(".trtw-quiet");
    expect(quiet.hidden).toBe(true); // 2 s: nothing to say
    advance(10_000);
    expect(quiet.hidden).toBe(false);
    expect(quiet.textContent).toBe("no callback for 12 s");
    expect(quiet.title).toMatch(/CPU/);
    model.update({ elapsed_s: 31, activity: { last_callback_s: 30.5 } });
    expect(quiet.hidden).toBe(true);
  });

  it("labels the columns and makes the whole name cell the expand target", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 2, rows: sampleTree() }));
    const head = el.querySelector(".trtw-colhead");
    expect(head.getAttribute("aria-hidden")).toBe("true");
    expect([...head.children].map((c) => c.textContent)).toEqual(["Phase", "", "Progress", "Steps", "%", "Time"]);
    const root = rows()[0];
    expect(root.getAttribute("aria-expanded")).toBe("true");
    root.querySelector(".trtw-label").click();
    expect(rows()[0].getAttribute("aria-expanded")).toBe("false");
  });

  it("shows the cancelling notice with a ticking wait time", () => {
    const model = fakeModel({
      status: "cancelling",
      elapsed_s: 10,
      cancel: { phase: "Measuring tactic time", requested_at_s: 8 },
      can_force: false,
      rows: [phase("Measuring tactic time", { id: 1, start_s: 5 })],
    });
    mount(model);
    const notice = el.querySelector(".trtw-notice");
    expect(notice.hidden).toBe(false);
    expect(el.querySelector(".trtw-notice-text").textContent).toBe(
      "Cancelling \u2014 waiting for the builder to finish the current step of Measuring tactic time (2 s)",
    );
    expect(stopBtn().disabled).toBe(true);
    advance(3000);
    expect(el.querySelector(".trtw-notice-text").textContent).toBe(
      "Cancelling \u2014 waiting for the builder to finish the current step of Measuring tactic time (5 s)",
    );
    model.update({ status: "cancelled", status_detail: "stopped by user", cancel: null });
    expect(notice.hidden).toBe(true);
  });

  it("cleanup removes model listeners and timers", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    expect(model.listenerCount()).toBeGreaterThan(0);
    expect(vi.getTimerCount()).toBe(1);
    stopBtn().click(); // arms a re-enable timeout too
    cleanup();
    cleanup = null;
    expect(model.listenerCount()).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(el.querySelector(".trtw")).toBeNull();
  });

  it("shows ETA and per-phase time left when eta is present", () => {
    mount(
      fakeModel({
        status: "running",
        elapsed_s: 4,
        eta: { total_s: 30, based_on: "build of 2024-05-01", phases: { Tactics: 10 } },
        rows: [phase("Tactics", { id: 1, start_s: 1 })],
      }),
    );
    expect(el.querySelector(".trtw-eta").textContent).toBe("ETA ~26 s (based on build of 2024-05-01)");
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe("~7 s left");
    advance(2000);
    expect(el.querySelector(".trtw-eta").textContent).toBe("ETA ~24 s (based on build of 2024-05-01)");
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe("~5 s left");
  });
});

describe("escaping", () => {
  const evil = "<img src=x onerror=alert(1)>";
  it("renders phase names, log messages and errors literally", () => {
    mount(
      fakeModel({
        status: "failed",
        elapsed_s: 1,
        error: evil,
        status_detail: evil,
        rows: [phase(evil, { id: 1, start_s: 0, end_s: 1, status: "cancelled" })],
        logs: [{ severity: "ERROR", message: evil, t: 0.5 }],
      }),
    );
    expect(rows()[0].querySelector(".trtw-name").textContent).toBe(evil);
    expect(el.querySelector(".trtw-log-msg").textContent).toBe(evil);
    expect(el.querySelector(".trtw-error").textContent).toBe(evil);
    expect(el.querySelector("img")).toBeNull();
    el.querySelector(".trtw-seg-btn:last-child").click(); // timeline too
    expect(el.querySelector(".trtw-tl-bar text").textContent).toBe(evil);
    expect(el.querySelector("img")).toBeNull();
    expect(document.querySelector("img")).toBeNull();
  });
});

describe("error and log panel", () => {
  it("shows the error box on failure and a collapsible log with counts", () => {
    const model = fakeModel({
      status: "failed",
      status_detail: "Builder failed: out of memory",
      elapsed_s: 1,
      error: "Builder failed: out of memory",
      logs: [
        { severity: "WARNING", message: "w1", t: 0.1 },
        { severity: "ERROR", message: "e1", t: 0.2 },
        { severity: "INTERNAL_ERROR", message: "e2", t: 0.3 },
      ],
    });
    mount(model);
    const box = el.querySelector(".trtw-error");
    expect(box.hidden).toBe(false);
    expect(box.getAttribute("role")).toBe("alert");
    expect(box.textContent).toBe("Builder failed: out of memory");
    expect(el.textContent.split("Builder failed: out of memory")).toHaveLength(2); // shown once, not twice
    const details = el.querySelector("details.trtw-logs");
    expect(details.querySelector("summary").textContent).toBe("TensorRT log (3): 2 errors, 1 warning");
    expect(details.querySelectorAll("li")).toHaveLength(3);
    const first = details.querySelector("li");
    model.set("logs", [...model.get("logs"), { severity: "WARNING", message: "w2", t: 0.4 }]);
    expect(details.querySelectorAll("li")).toHaveLength(4);
    expect(details.querySelector("li")).toBe(first); // appended, not rebuilt
    expect(details.querySelector("summary").textContent).toBe("TensorRT log (4): 2 errors, 2 warnings");
    model.set("logs", []);
    expect(details.hidden).toBe(true);
  });

  it("shows expected lines (the user's cancel) neutrally, explained, and never opens the log for them", () => {
    const model = fakeModel({
      status: "cancelled",
      elapsed_s: 1,
      logs: [
        {
          severity: "ERROR",
          message: "Error Code 7: BuildCanceled",
          t: 0.5,
          expected: "the build was cancelled by the user: TensorRT reports its own cancel as an error",
        },
        { severity: "WARNING", message: "w1", t: 0.2 },
      ],
    });
    mount(model);
    const details = el.querySelector("details.trtw-logs");
    expect(details.querySelector("summary").textContent).toBe("TensorRT log (2): 1 warning, 1 expected");
    expect(details.open).toBe(false);
    expect(details.dataset.errors).toBe("0"); // the summary is not drawn as an error
    const line = details.querySelector("li");
    expect(line.dataset.expected).toBe("true");
    expect(line.querySelector(".trtw-log-sev").textContent).toBe("EXPECTED");
    expect(line.querySelector(".trtw-log-sev").title).toBe("TensorRT logged this as ERROR");
    expect(line.querySelector(".trtw-log-msg").textContent).toBe("Error Code 7: BuildCanceled"); // raw line kept
    expect(line.querySelector(".trtw-log-why").textContent).toMatch(/cancelled by the user/);
  });

  it("hides the error box when there is no error", () => {
    mount(fakeModel({ status: "succeeded", elapsed_s: 1, error: "" }));
    expect(el.querySelector(".trtw-error").hidden).toBe(true);
    expect(el.querySelector(".trtw-logs").hidden).toBe(true);
  });
});

describe("extras", () => {
  it("shows history deltas and a resource sparkline", () => {
    mount(
      fakeModel({
        status: "succeeded",
        elapsed_s: 3,
        rows: [
          phase("A", { id: 1, start_s: 0, end_s: 1 }),
          phase("B", { id: 2, start_s: 1, end_s: 3 }),
          phase("C", { id: 3, start_s: 1, end_s: 3 }),
        ],
        history_delta: { 1: 1.23, 2: -0.4, 3: 0.01 },
        eta: { total_s: 3, based_on: "the build of 2026-12-01 10:00", phases: {} },
        resources: {
          samples: [
            [0, 100e6, null, null, 0],
            [1, 300e6, null, null, 97.5],
            [2, 200e6, null, null, 99],
          ],
          peak_rss: 300 * 1024 * 1024,
          peak_gpu_mem: null,
          trt_peak: null,
          scope: "the builder process (pid 42)",
        },
      }),
    );
    expect(txt(rowNamed("A"), ".trtw-note")).toBe("+1.2 s");
    expect(rowNamed("A").querySelector(".trtw-note").title).toBe("1.2 s slower than the build of 2026-12-01 10:00");
    expect(txt(rowNamed("B"), ".trtw-note")).toBe("\u2212400 ms");
    expect(txt(rowNamed("C"), ".trtw-note")).toBe(""); // 10 ms: not worth a number
    expect(el.querySelector(".trtw-colhead").textContent).toContain("\u0394 last build");
    expect(el.querySelector(".trtw-peak").textContent).toBe("memory peak 300.0 MiB");
    const tip = el.querySelector(".trtw-res").title;
    expect(tip).toContain("the builder process (pid 42)");
    expect(tip).toContain("CPU now: 99 %");
    expect(el.querySelector(".trtw-spark-rss").getAttribute("points").split(" ")).toHaveLength(3);
  });

  it("says whose the GPU memory figure is", () => {
    const gpuScope = "all processes on GPU 0 (NVIDIA H200): NVML does not list the builder's pid 42";
    mount(
      fakeModel({
        status: "running",
        elapsed_s: 1,
        rows: [phase("A", { id: 1, start_s: 0 })],
        resources: {
          samples: [[0, 100e6, 2 * 1024 ** 3, 5, 0]],
          peak_rss: 100e6,
          peak_gpu_mem: 2 * 1024 ** 3,
          trt_peak: null,
          scope: "the builder process (pid 42)",
          gpu_scope: gpuScope,
        },
      }),
    );
    expect(el.querySelector(".trtw-peak").textContent).toContain("GPU 2.0 GiB");
    expect(el.querySelector(".trtw-res").title).toContain(`GPU memory of ${gpuScope}: dashed line.`);
  });
});

describe("keyed reconciliation", () => {
  it("reuses the same DOM node for unchanged rows and only appends new ones", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    const before = rows();
    const parseName = before[1].querySelector(".trtw-name");
    const next = sampleTree();
    next.push(phase("Serializing", { id: 9, parent: 1, depth: 1, start_s: 1.5 }));
    next[3] = { ...next[3], step: 5 }; // progress on a running row
    model.update({ elapsed_s: 2, rows: next });
    const after = rows();
    expect(after).toHaveLength(5);
    for (let i = 0; i < 4; i++) expect(after[i]).toBe(before[i]);
    expect(after[1].querySelector(".trtw-name")).toBe(parseName);
    expect(txt(after[3], ".trtw-steps")).toBe("5/8");
    expect(after[4].querySelector(".trtw-name").textContent).toBe("Serializing");
  });

  it("handles a 1,200-instance tree and removes rows that vanish", () => {
    const view = new TrtView(fakeModel({ status: "running", elapsed_s: 100 }), document.createElement("div"));
    const big = [phase("Build", { id: 0 })];
    for (let i = 1; i <= 1200; i++)
      big.push(phase(`Layer ${i % 7}`, { id: i, parent: 0, start_s: i / 20, end_s: i / 20 + 0.04 }));
    view.applyPhases(big.slice(0, 300));
    expect(view.tree.el.querySelectorAll('[role="treeitem"]')).toHaveLength(300); // short: every row in the DOM
    const keep = view.tree.el.children[5];
    view.applyPhases(big);
    // long: only the rows in view (and a margin) are in the DOM; spacers stand for the rest
    const shown = view.tree.el.querySelectorAll('[role="treeitem"]');
    expect(shown.length).toBeLessThan(100);
    expect(view.tree.flat).toHaveLength(1201);
    const spacers = [...view.tree.el.querySelectorAll(".trtw-spacer")].map((s) =>
      Number.parseInt(/** @type {HTMLElement} */ (s).style.height, 10),
    );
    expect(spacers[0] + spacers[1] + shown.length * 20).toBe(1201 * 20);
    expect(keep.parentNode).toBe(view.tree.el); // the same node, still shown
    view.applyPhases(big.slice(0, 200));
    expect(view.tree.el.querySelectorAll('[role="treeitem"]')).toHaveLength(200);
    expect(view.tree.el.querySelectorAll(".trtw-spacer")).toHaveLength(0);
    expect(view.tree.rows.size).toBeLessThanOrEqual(200); // the vanished rows are forgotten
    view.destroy();
  });

  it("renders 10,000 expanded rows as a window and reaches the last one from the keyboard", () => {
    const host = document.createElement("div");
    document.body.append(host);
    const view = new TrtView(fakeModel({ status: "running", elapsed_s: 100 }), host);
    const big = [phase("Build", { id: 0 })];
    for (let i = 1; i <= 10000; i++)
      big.push(phase(`Layer ${i % 3}`, { id: i, parent: 0, start_s: i / 200, end_s: i / 200 + 0.004 }));
    view.applyPhases(big);
    expect(view.tree.el.querySelectorAll('[role="treeitem"]').length).toBeLessThan(100);
    const first = /** @type {HTMLElement} */ (view.tree.el.querySelector('[role="treeitem"]'));
    first.focus();
    first.dispatchEvent(new KeyboardEvent("keydown", { key: "End", bubbles: true }));
    expect(document.activeElement.querySelector(".trtw-name").textContent).toBe("Layer 1"); // 10000 % 3
    expect(view.tree.indexOf.get(view.tree.tabKey)).toBe(10000);
    document.activeElement.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp", bubbles: true }));
    expect(view.tree.indexOf.get(view.tree.tabKey)).toBe(9999);
    view.destroy();
    host.remove();
  });
});

describe("timeline", () => {
  it("renders one rect per instance with a <title>, and a group as one rect", () => {
    const model = fakeModel({ status: "succeeded", elapsed_s: 4, rows: sampleTree() });
    mount(model);
    el.querySelector(".trtw-seg-btn:last-child").click();
    expect(el.querySelector(".trtw-tree").hidden).toBe(true);
    const tl = el.querySelector(".trtw-timeline");
    expect(tl.hidden).toBe(false);
    const rects = tl.querySelectorAll("rect");
    expect(rects).toHaveLength(4);
    const titles = [...tl.querySelectorAll("rect > title")].map((t) => t.textContent);
    expect(titles).toHaveLength(4);
    expect(titles[1]).toContain("Parsing network");
    expect(titles[1]).toContain("500 ms");
    expect(titles[1]).toContain("steps 10/10"); // done: shown as complete
    for (const r of rects) expect(r.namespaceURI).toBe("http://www.w3.org/2000/svg");

    const withGroup = [phase("Build", { id: 1, start_s: 0, end_s: 6 })];
    for (let i = 0; i < 8; i++)
      withGroup.push(phase("Measuring tactic time", { id: 10 + i, parent: 1, start_s: i * 0.5, end_s: i * 0.5 + 0.4 }));
    model.update({ rows: withGroup, elapsed_s: 6 });
    expect(tl.querySelectorAll("rect")).toHaveLength(2);
    expect([...tl.querySelectorAll("text")].map((t) => t.textContent)).toContain("Measuring tactic time \u00d78");

    // switching back keeps the tree intact
    el.querySelector(".trtw-seg-btn:first-child").click();
    expect(el.querySelector(".trtw-tree").hidden).toBe(false);
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual(["Build", "Measuring tactic time"]);
  });
});

describe("misc", () => {
  it("never uses HTML-parsing sinks in the source", () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const bundle = path.join(here, "..", "trt_widget", "static", "widget.js");
    const srcDir = path.join(here, "src");
    let src = readdirSync(srcDir)
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(path.join(srcDir, f), "utf8"))
      .join("\n");
    if (existsSync(bundle)) src += readFileSync(bundle, "utf8");
    for (const sink of [
      "innerHTML",
      "outerHTML",
      "insertAdjacentHTML",
      "document.write",
      "DOMParser",
      "createContextualFragment",
    ]) {
      expect(src.includes(sink), sink).toBe(false);
    }
  });

  it("keeps collapse state and view mode when the widget is re-rendered for the same model", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    rowNamed("Optimizing").querySelector(".trtw-twisty").click();
    cleanup();
    el.remove();
    mount(model);
    expect(rowNamed("Optimizing").getAttribute("aria-expanded")).toBe("false");
    expect(rowNamed("Fusing layers")).toBeUndefined();
  });

  it("re-enables Stop if Python never answers a click", () => {
    vi.useFakeTimers();
    const model = fakeModel({ status: "running", elapsed_s: 1 });
    mount(model);
    stopBtn().click();
    expect(stopBtn().disabled).toBe(true);
    vi.advanceTimersByTime(2500);
    expect(stopBtn().disabled).toBe(false);
    stopBtn().click();
    expect(model.sent).toEqual([{ type: "stop" }, { type: "stop" }]);
  });

  it("grows running timeline bars with the live clock", () => {
    vi.useFakeTimers();
    let clock = 0;
    vi.spyOn(performance, "now").mockImplementation(() => clock);
    const model = fakeModel({
      status: "running",
      elapsed_s: 2,
      rows: [phase("Done", { id: 1, start_s: 0, end_s: 1 }), phase("Live", { id: 2, start_s: 1 })],
    });
    mount(model);
    el.querySelector(".trtw-seg-btn:last-child").click();
    const bars = el.querySelectorAll(".trtw-tl-bar");
    const w0 = Number.parseFloat(bars[1].getAttribute("width"));
    clock += 500;
    vi.advanceTimersByTime(500);
    const w1 = Number.parseFloat(bars[1].getAttribute("width"));
    expect(w1).toBeGreaterThan(w0);
    expect(bars[1].querySelector("title").textContent).toContain("Live");
  });

  it("renders incomplete / odd rows defensively", () => {
    mount(
      fakeModel({
        status: "running",
        elapsed_s: "x",
        rows: [
          null,
          5,
          { name: "no id" },
          { id: 1 },
          { id: 2, parent: 99, name: "orphan", status: "weird" },
          { id: 1, name: "dup" },
        ],
        logs: "nope",
        cancel: 3,
        eta: { total_s: "soon" },
        history_delta: [1, 2],
        resources: { samples: [[0, 1], "bad", [1, 2, null, null]] },
      }),
    );
    expect(rows().map((r) => r.querySelector(".trtw-name").textContent)).toEqual(["", "orphan"]);
    expect(el.querySelector(".trtw-logs").hidden).toBe(true);
    expect(el.querySelector(".trtw-eta").hidden).toBe(true);
  });
});
