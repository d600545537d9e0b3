// @vitest-environment jsdom
import { afterEach, describe, expect, it, vi } from "vitest";
import { phaseDiffs, readComparison, twinSpread } from "../../src/matrix/compare.js";
import { BuildModelAdaptor, readRows } from "../../src/matrix/data.js";
import matrix from "../../src/matrix/matrix.js";
import { matrixRow, NB } from "../helpers.js";

/** A minimal anywidget-like model: get / set / on / off / send. */
function fakeModel(init = {}) {
  const state = { ...init };
  const listeners = new Map();
  return {
    sent: [],
    get: (k) => state[k],
    set(k, v) {
      state[k] = v;
      for (const cb of [...(listeners.get(`change:${k}`) || [])]) cb();
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
    listenerCount: () => [...listeners.values()].reduce((n, l) => n + l.length, 0),
  };
}

const row = matrixRow;

const buildTraits = (extra = {}) => ({
  status: "running",
  status_detail: "",
  elapsed_s: 1.0,
  phases_json: JSON.stringify([
    {
      id: 0,
      name: "Building engine",
      parent: null,
      depth: 0,
      step: 1,
      num_steps: 6,
      start_s: 0,
      end_s: null,
      duration_s: null,
      status: "running",
    },
  ]),
  engine_size: 0,
  error: "",
  logs: [],
  cancel: null,
  can_force: true,
  ...extra,
});

let cleanup = [];
afterEach(() => {
  for (const fn of cleanup) fn();
  cleanup = [];
  document.body.replaceChildren();
});

function render(init) {
  const model = fakeModel(init);
  /** @type {any} */
  const el = document.createElement("div");
  document.body.append(el);
  const destroy = matrix.render(/** @type {any} */ ({ model, el }));
  cleanup.push(destroy);
  return { model, el, destroy };
}

describe("matrix rows", () => {
  it("shows one row per build with status, phase progress, elapsed time and engine size", () => {
    const rows = [
      row(0),
      row(1, { status: "queued", phase: null }),
      row(2, { status: "succeeded", phase: null, engine_size: 2048, elapsed_s: 3.25 }),
      row(3, { status: "failed", phase: null, error: "variant 'x': optimization_level must be an integer 0..5" }),
    ];
    const { el } = render({ status: "running", rows_json: JSON.stringify(rows), expanded: [], details_json: "{}" });
    const trs = el.querySelectorAll("tr.trtw-mx-row");
    expect(trs).toHaveLength(4);
    expect([...trs].map((tr) => tr.dataset.status)).toEqual(["running", "queued", "succeeded", "failed"]);
    expect(trs[0].querySelector(".trtw-mx-phase-name").textContent).toBe("Timing tactics");
    expect(trs[0].querySelector(".trtw-steps").textContent).toBe("3/10");
    expect(trs[0].querySelector(".trtw-fill").style.width).toBe("30%");
    expect(trs[1].querySelector(".trtw-mx-phase-name").textContent).toBe("waiting for a builder");
    expect(trs[2].querySelector(".trtw-mx-size").textContent).toBe(`2.0${NB}KiB`);
    expect(trs[2].querySelector(".trtw-mx-elapsed").textContent).toBe(`3.3${NB}s`);
    expect(trs[3].querySelector(".trtw-mx-phase-name").textContent).toMatch(/optimization_level must be/);
    expect(el.querySelector(".trtw-mx-counts").textContent).toBe("1 running, 1 queued, 1 succeeded, 1 failed");
  });

  it("says what a queued build waits for where its runner says so", () => {
    const queued = row(0, { status: "queued", phase: null, detail: "starting a local Ray instance \u2026" });
    const { model, el } = render({ status: "running", rows_json: JSON.stringify([queued]) });
    const name = () => el.querySelector(".trtw-mx-phase-name").textContent;
    expect(name()).toBe("starting a local Ray instance \u2026");
    model.set("rows_json", JSON.stringify([{ ...queued, detail: "" }]));
    expect(name()).toBe("waiting for a builder");
  });

  it("counts no time while a build is queued, and none for one that never started", () => {
    vi.useFakeTimers();
    try {
      const queued = row(1, { status: "queued", phase: null, elapsed_s: 2.6, started: false });
      const { model, el } = render({ status: "running", rows_json: JSON.stringify([row(0), queued]) });
      const cell = () => el.querySelectorAll("tr.trtw-mx-row")[1].querySelector(".trtw-mx-elapsed").textContent;
      expect(cell()).toBe("");
      vi.advanceTimersByTime(1000);
      expect(cell()).toBe("");
      // it starts: its clock restarts, and the column shows the build's own time from there
      model.set("rows_json", JSON.stringify([row(0), row(1, { elapsed_s: 0.883, started: true })]));
      expect(cell()).toBe(`883${NB}ms`);
      const never = row(1, {
        status: "cancelled",
        phase: null,
        elapsed_s: 5.57,
        started: false,
        detail: "never started: stopped by user (Stop all) while queued",
      });
      model.set("rows_json", JSON.stringify([row(0), never]));
      expect(cell()).toBe("");
      const name = el.querySelectorAll("tr.trtw-mx-row")[1].querySelector(".trtw-mx-phase-name").textContent;
      expect(name).toBe("never started: stopped by user (Stop all) while queued");
    } finally {
      vi.useRealTimers();
    }
  });

  it("never parses a label as HTML", () => {
    const evil = '<img src=x onerror="globalThis.pwned=1">';
    const { el } = render({ rows_json: JSON.stringify([row(0, { model: evil, variant: evil })]) });
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector(".trtw-mx-model").textContent).toBe(evil);
  });

  it("sends Stop for one build and Stop all, and disables them when nothing runs", () => {
    const { model, el } = render({ rows_json: JSON.stringify([row(0), row(1, { status: "succeeded" })]) });
    const stops = el.querySelectorAll(".trtw-mx-stop");
    stops[0].click();
    stops[0].click(); // swallowed until the status changes
    expect(model.sent).toEqual([{ type: "stop", build: 0 }]);
    expect(stops[1].hidden).toBe(true);
    el.querySelector(".trtw-mx-stop-all").click();
    expect(model.sent.at(-1)).toEqual({ type: "stop_all" });
    model.set("rows_json", JSON.stringify([row(0, { status: "cancelling" }), row(1, { status: "succeeded" })]));
    expect(stops[0].textContent).toBe("Force stop");
    expect(stops[0].disabled).toBe(false);
    model.set("rows_json", JSON.stringify([row(0, { status: "cancelled" }), row(1, { status: "succeeded" })]));
    expect(el.querySelector(".trtw-mx-stop-all").disabled).toBe(true);
  });
});

describe("expanded rows", () => {
  it("show the build's phase tree with the BuildWidget view, whose Stop names the build", () => {
    const { model, el } = render({ rows_json: JSON.stringify([row(0), row(1)]), expanded: [], details_json: "{}" });
    const toggle = el.querySelectorAll(".trtw-mx-toggle")[1];
    toggle.click();
    expect(model.sent).toEqual([{ type: "expand", build: 1, open: true }]);
    const detail = el.querySelector('tr.trtw-mx-detail[data-build="1"]');
    expect(detail.hidden).toBe(false);
    model.set("details_json", JSON.stringify({ 1: buildTraits() }));
    model.set("expanded", [1]);
    expect(detail.querySelector(".trtw-tree")).not.toBeNull();
    expect(detail.querySelector(".trtw-name").textContent).toBe("Building engine");
    detail.querySelector(".trtw-stop").click();
    expect(model.sent.at(-1)).toEqual({ type: "stop", build: 1 });
    // a new snapshot updates the tree in place
    const phases = JSON.parse(buildTraits().phases_json);
    phases.push({ ...phases[0], id: 1, name: "Timing tactics", parent: 0, depth: 1 });
    model.set("details_json", JSON.stringify({ 1: buildTraits({ phases_json: JSON.stringify(phases) }) }));
    expect([...detail.querySelectorAll(".trtw-name")].map((n) => n.textContent)).toContain("Timing tactics");
    model.set("expanded", []);
    expect(detail.hidden).toBe(true);
    expect(detail.querySelector(".trtw-tree")).toBeNull();
  });

  it("the adaptor fires change events only for traits that changed", () => {
    const sent = [];
    const a = new BuildModelAdaptor((m) => sent.push(m), 4);
    const fired = [];
    a.on("change:status", () => fired.push("status"));
    a.on("change:logs", () => fired.push("logs"));
    a.update({ status: "running", logs: [] });
    a.update({ status: "running", logs: [] });
    a.update({ status: "succeeded", logs: [] });
    expect(fired).toEqual(["status", "logs", "status"]);
    a.send({ type: "stop" });
    expect(sent).toEqual([{ type: "stop", build: 4 }]);
  });
});

describe("comparison", () => {
  const builds = [
    { id: 0, model: "m", variant: "a", status: "succeeded", build_s: 2, engine_size: 1000, phases: { X: 1, Y: 0.5 } },
    { id: 1, model: "m", variant: "b", status: "succeeded", build_s: 3, engine_size: 1500, phases: { X: 2.5, Y: 0.4 } },
    { id: 2, model: "m", variant: "c", status: "failed", build_s: 0.1, engine_size: null, phases: {} },
  ];

  it("shows time and size against the chosen baseline, largest phase differences first", () => {
    const { model, el } = render({ rows_json: "[]", comparison_json: "" });
    expect(el.querySelector(".trtw-mx-compare").hidden).toBe(true);
    model.set("comparison_json", JSON.stringify({ builds }));
    const rows = el.querySelectorAll(".trtw-mx-compare-table tr[data-build]");
    expect(rows).toHaveLength(3);
    expect(rows[0].textContent).toContain("baseline");
    expect(rows[1].textContent).toContain(`+1.0${NB}s`);
    expect(rows[1].textContent).toContain(`X +1.5${NB}s`);
    const select = el.querySelector(".trtw-mx-baseline");
    select.value = "1";
    select.dispatchEvent(new Event("change"));
    const again = el.querySelectorAll(".trtw-mx-compare-table tr[data-build]");
    expect(again[0].textContent).toContain(`\u22121.0${NB}s`);
    expect(again[1].textContent).toContain("baseline");
  });

  it("says what its build times leave out: the builder process's start-up, in a column of its own", () => {
    const { model, el } = render({ rows_json: "[]", comparison_json: "" });
    const started = [{ ...builds[0], start_up_s: 0.113 }, builds[1]];
    model.set("comparison_json", JSON.stringify({ builds: started }));
    const head = [...el.querySelectorAll(".trtw-mx-compare-table th")].map((th) => th.textContent);
    expect(head).toContain("build time (no start-up)");
    expect(head[head.indexOf("build time (no start-up)") + 1]).toBe("start-up");
    const rows = el.querySelectorAll(".trtw-mx-compare-table tr[data-build]");
    expect(rows[0].textContent).toContain(`113${NB}ms`);
    expect(el.querySelector(".trtw-mx-compare-note").textContent).toContain("leave out starting the builder process");
  });

  it("says what identical builds differed by: run-to-run variation (issue 39, seventh trial)", () => {
    // three identical variants, all warm, the first still ~16 % slower (747 vs 629/622 ms): nothing said so
    const same = { model: "m", status: "succeeded", engine_size: 1000, start_up_s: 0, cold_builder: false };
    const builds = [
      { ...same, id: 0, variant: "same1", build_s: 0.747, phases: { X: 0.6 }, twins: [1, 2] },
      { ...same, id: 1, variant: "same2", build_s: 0.629, phases: { X: 0.5 }, twins: [0, 2] },
      { ...same, id: 2, variant: "same3", build_s: 0.622, phases: { X: 0.5 }, twins: [0, 1] },
      { ...same, id: 3, variant: "opt0", build_s: 0.5, phases: { X: 0.4 }, twins: [] },
    ];
    const { model, el } = render({ rows_json: "[]", comparison_json: "" });
    model.set("comparison_json", JSON.stringify({ builds }));
    const note = el.querySelector(".trtw-mx-compare-note").textContent;
    expect(note).toContain(
      `same model with the same options (same1, same2, same3) differed by up to 125${NB}ms (20${NB}%)`,
    );
    expect(note).toContain("run-to-run variation");
    // no twins (or one left that succeeded): nothing to say
    const { model: m2, el: el2 } = render({ rows_json: "[]", comparison_json: "" });
    const alone = builds.map((b) => ({ ...b, twins: [] }));
    m2.set("comparison_json", JSON.stringify({ builds: alone }));
    expect(el2.querySelector(".trtw-mx-compare-note").textContent).not.toContain("run-to-run");
    const failed = builds.map((b) => (b.id === 0 || b.id === 1 ? { ...b, status: "failed" } : b));
    m2.set("comparison_json", JSON.stringify({ builds: failed }));
    expect(el2.querySelector(".trtw-mx-compare-note").textContent).not.toContain("run-to-run");
    expect(twinSpread(readComparison(builds), false)).toContain(`125${NB}ms`);
  });

  it("marks a builder process's first build among warm ones and compares against a warm one (issue 39, 18)", () => {
    const { model, el } = render({ rows_json: "[]", comparison_json: "" });
    // three identical variants: the first ran in a fresh builder process (its phases held one-time costs)
    const same = { model: "m", status: "succeeded", engine_size: 1000, start_up_s: 0 };
    const identical = [
      { ...same, id: 0, variant: "a", build_s: 1.1, cold_builder: true, phases: { X: 0.9 } },
      { ...same, id: 1, variant: "b", build_s: 0.72, cold_builder: false, phases: { X: 0.6 } },
      { ...same, id: 2, variant: "c", build_s: 0.78, cold_builder: false, phases: { X: 0.65 } },
    ];
    model.set("comparison_json", JSON.stringify({ builds: identical }));
    const rows = el.querySelectorAll(".trtw-mx-compare-table tr[data-build]");
    expect(rows[1].textContent).toContain("baseline"); // the first warm build, not the cold one
    expect(rows[0].textContent).toContain("first build in a new or idle builder process: may include one-time costs");
    expect(rows[0].classList.contains("trtw-mx-first-build")).toBe(true);
    expect(rows[2].textContent).not.toContain("first build");
    expect(el.querySelector(".trtw-mx-compare-note").textContent).toContain(
      "first build in a new or idle builder process",
    );
    // every build a first one (a builder process per build): alike, nothing to mark
    const { model: m2, el: el2 } = render({ rows_json: "[]", comparison_json: "" });
    m2.set("comparison_json", JSON.stringify({ builds: identical.map((b) => ({ ...b, cold_builder: true })) }));
    expect(el2.querySelector(".trtw-mx-compare-table").textContent).not.toContain("first build");
    expect(el2.querySelectorAll(".trtw-mx-compare-table tr[data-build]")[0].textContent).toContain("baseline");
  });

  it("phaseDiffs and the readers tolerate anything", () => {
    const [a, b] = readComparison(builds);
    expect(phaseDiffs(b, a)).toEqual([
      ["X", 1.5],
      ["Y", -0.09999999999999998],
    ]);
    expect(readComparison("nope")).toEqual([]);
    expect(readRows([null, { id: "x" }, { id: 1 }])).toHaveLength(1);
  });

  it("removes its listeners and ticker on destroy", () => {
    const { model, destroy } = render({ rows_json: JSON.stringify([row(0)]) });
    expect(model.listenerCount()).toBeGreaterThan(0);
    destroy();
    cleanup = [];
    expect(model.listenerCount()).toBe(0);
  });
});

describe("a watch drawn by the matrix view", () => {
  it("shows its title and note as text, and hides the Stop buttons when only the kernel interrupt works", () => {
    const { model, el } = render({
      status: "running",
      rows_json: JSON.stringify([row(0)]),
      title: "Watching <b>fn</b>() — 1 build",
      note: "Stop: interrupt the kernel",
      stop_buttons: false,
    });
    expect(el.querySelector(".trtw-mx-title").textContent).toBe("Watching <b>fn</b>() — 1 build");
    expect(el.querySelector(".trtw-mx-title b")).toBeNull();
    expect(el.querySelector(".trtw-mx-note").textContent).toBe("Stop: interrupt the kernel");
    expect(el.querySelector(".trtw-mx-stop-all").hidden).toBe(true);
    expect(el.querySelector(".trtw-matrix").dataset.stopButtons).toBe("off");
    model.set("stop_buttons", true);
    model.set("note", "");
    expect(el.querySelector(".trtw-mx-stop-all").hidden).toBe(false);
    expect(el.querySelector(".trtw-mx-note").hidden).toBe(true);
    expect(el.querySelector(".trtw-matrix").dataset.stopButtons).toBe("on");
  });

  it("names its second column as the watch says (issue 39, fifth trial I: it holds the TensorRT call)", () => {
    const { model, el } = render({ rows_json: JSON.stringify([row(0)]), variant_label: "call" });
    const heads = () => [...el.querySelectorAll(".trtw-mx-head th")].map((th) => th.textContent);
    expect(heads()).toContain("call");
    expect(heads()).not.toContain("variant");
    model.set("variant_label", "");
    expect(heads()).toContain("variant");
  });

  it("keeps the matrix title when no title is set", () => {
    const { el } = render({ rows_json: JSON.stringify([row(0), row(1)]) });
    expect(el.querySelector(".trtw-mx-title").textContent).toBe("Build matrix \u2014 2 builds");
  });
});

describe("a never-started build in the comparison (issue 39, fifth trial B)", () => {
  it("has no time and no differences", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const container = document.createElement("div");
    const data = readComparison([
      {
        id: 0,
        model: "m",
        variant: "A",
        status: "succeeded",
        build_s: 1.7,
        start_up_s: 0,
        engine_size: 10,
        phases: { X: 1.2 },
      },
      {
        id: 1,
        model: "m",
        variant: "B",
        status: "cancelled",
        build_s: null,
        start_up_s: 0,
        engine_size: null,
        phases: {},
      },
    ]);
    renderComparison(container, data, 0, () => undefined);
    const row = container.querySelector('tr[data-build="1"]');
    expect(row.textContent).toContain("never started");
    expect(row.textContent).toContain("not compared");
    expect(row.textContent).not.toMatch(/s\b|\u2212|\+/);
  });
});

describe("a failed build in the comparison (issue 39, sixth trial 1)", () => {
  it("is no faster build: no time or phase differences, marked failed", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const ok = { id: 0, model: "m", variant: "A", status: "succeeded", build_s: 1.1, start_up_s: 0, engine_size: 10 };
    const bad = {
      id: 1,
      model: "m",
      variant: "bad",
      status: "failed",
      build_s: 0.085,
      start_up_s: 0,
      engine_size: null,
    };
    const data = readComparison([
      { ...ok, phases: { X: 1 } },
      { ...bad, phases: { X: 0.01 } },
    ]);
    for (const baseline of [0, 1]) {
      const container = document.createElement("div");
      renderComparison(container, data, baseline, () => undefined);
      const row = container.querySelector(`tr[data-build="${1 - baseline}"]`);
      expect(row.textContent).not.toMatch(/\u2212|\+/);
      expect(row.textContent).not.toContain("X ");
    }
    const container = document.createElement("div");
    renderComparison(container, data, 0, () => undefined);
    expect(container.querySelector('tr[data-build="1"]').textContent).toContain(`failed after 85${NB}ms`);
    // "no differences" read as a match (issue 39, seventh trial 3): it was not compared
    expect(container.querySelector('tr[data-build="1"]').textContent).toContain("not compared");
  });
});

describe("the comparison of two models and of builds none of which succeeded (issue 39, eighth trial)", () => {
  const ok = { status: "succeeded", start_up_s: 0, cold_builder: false, engine_size: 1000, twins: [] };
  it("compares each build with a build of its own model, never with the other model's", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const data = readComparison([
      { ...ok, id: 0, model: "a.onnx", variant: "opt=0", build_s: 1.0, engine_size: 2000, phases: { X: 0.9 } },
      { ...ok, id: 1, model: "a.onnx", variant: "opt=3", build_s: 1.5, engine_size: 2000, phases: { X: 1.4 } },
      { ...ok, id: 2, model: "b.onnx", variant: "opt=0", build_s: 0.2, engine_size: 500, phases: { X: 0.1 } },
      { ...ok, id: 3, model: "b.onnx", variant: "opt=3", build_s: 0.3, engine_size: 500, phases: { X: 0.2 } },
    ]);
    const container = document.createElement("div");
    expect(renderComparison(container, data, 0, () => undefined)).toBe(0);
    const text = (/** @type {number} */ id) => container.querySelector(`tr[data-build="${id}"]`).textContent;
    expect(text(2)).toContain("baseline"); // b.onnx's own baseline, not a −1.5 KiB change of a.onnx's engine
    expect(text(2)).not.toMatch(/\u2212|\+/);
    expect(text(3)).toContain(`+100${NB}ms`);
    expect(text(3)).not.toContain("\u2212"); // against #0 it was "−700 ms", "−1.5 KiB"
    expect(text(1)).toContain(`+500${NB}ms`);
    expect(container.querySelector(".trtw-mx-compare-note").textContent).toContain("baseline of its own model");
    // the baseline picked for b.onnx leaves a.onnx's where it was
    renderComparison(container, data, 3, () => undefined);
    expect(text(0)).toContain("baseline");
    expect(text(2)).toContain(`\u2212100${NB}ms`);
  });

  it("says there is nothing to compare when no build succeeded", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const data = readComparison([
      { ...ok, id: 0, model: "m", variant: "A", status: "cancelled", build_s: 6.54, elapsed_s: 6.62, phases: {} },
      { ...ok, id: 1, model: "m", variant: "B", status: "cancelled", build_s: null, elapsed_s: null, phases: {} },
    ]);
    const container = document.createElement("div");
    expect(renderComparison(container, data, null, () => undefined)).toBeNull();
    expect(container.textContent).toBe("Nothing to compare: no build succeeded.");
    expect(container.querySelector("tr")).toBeNull(); // no "baseline", no "no differences"
  });

  it("says a cancelled build's time as its row does: elapsed, start-up included", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const data = readComparison([
      { ...ok, id: 0, model: "m", variant: "A", build_s: 1.0, phases: {} },
      { ...ok, id: 1, model: "m", variant: "B", build_s: 1.1, phases: {} },
      { ...ok, id: 2, model: "m", variant: "C", status: "cancelled", build_s: 6.54, elapsed_s: 6.62, phases: {} },
    ]);
    const container = document.createElement("div");
    renderComparison(container, data, null, () => undefined);
    expect(container.querySelector('tr[data-build="2"]').textContent).toContain(`cancelled after 6.6${NB}s`); // 6.62 s: not 6.54 s (6.5 s), its time without start-up
  });
});

describe("a failed build's reason in the comparison (issue 39, eighth trial 4)", () => {
  it("says why on its row, on one line, cut with an ellipsis; the whole first line is the tooltip", async () => {
    const { renderComparison } = await import("../../src/matrix/compare.js");
    const ok = { id: 0, model: "m", variant: "A", status: "succeeded", build_s: 1.1, start_up_s: 0, engine_size: 10 };
    const why = "variant 'bad' of m: optimization_level must be an integer 0..5, got 9";
    const long = `ONNX file not found: /${"very/".repeat(60)}model.onnx`;
    const bad = { id: 1, model: "m", variant: "bad", status: "failed", build_s: 0.043, start_up_s: 0 };
    const data = readComparison([
      { ...ok, phases: { X: 1 } },
      { ...bad, phases: {}, reason: `${why}\n  Traceback line two` },
      { ...bad, id: 2, phases: {}, reason: long },
      { ...bad, id: 3, status: "cancelled", phases: {}, reason: "stopped by user (Stop all)" },
    ]);
    const container = document.createElement("div");
    renderComparison(container, data, 0, () => undefined);
    const cell = (id) => /** @type {HTMLElement} */ (container.querySelector(`tr[data-build="${id}"] td:last-child`));
    expect(cell(1).textContent).toBe(`not compared: ${why}`);
    expect(cell(1).title).toBe(why);
    expect(cell(2).textContent.length).toBeLessThan(200);
    expect(cell(2).textContent.endsWith("\u2026")).toBe(true);
    expect(cell(2).title).toBe(long);
    expect(cell(3).textContent).toBe("not compared: stopped by user (Stop all)");
    expect(cell(0).textContent).toBe("baseline");
    expect(cell(0).title).toBe("");
  });
});
