// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import {
  deltaText,
  EngineView,
  filterSort,
  parseDelta,
  parseEngine,
  precisionMix,
  ROW_PX,
} from "../../src/build/engine.js";
import { el, fakeModel, mount, NB, phase, useDom } from "../helpers.js";

useDom();

/** An engine report as Python's EngineReport.to_dict() writes it. */
function report(n, extra = {}) {
  const layers = [];
  for (let i = 0; i < n; i++) {
    layers.push({
      name: `layer_${String(i).padStart(5, "0")}`,
      type: i % 3 === 0 ? "Reformat" : "CaskConvolution",
      precision: i % 3 === 0 ? "FP32\u2192FP16" : i % 2 ? "FP16" : "INT8",
      format: "Channel major FP16 format where channel % 8 == 0",
      tactic: `sm80_kernel_${n - i}`,
      tactic_value: "0x0000000000000001",
      onnx_nodes: i % 3 === 0 ? [] : [`conv_${i}`, `relu_${i}`],
      stream: 0,
      origin: "",
      weights: i,
    });
  }
  return JSON.stringify({
    layers,
    bindings: ["input", "output"],
    memory: { weights: 2048, activations: 1024, engine_size: 4096, scratch: null },
    source: "test",
    form: "oneline",
    total_layers: n,
    notes: [],
    ...extra,
  });
}

function finished(engineJson) {
  return fakeModel({
    status: "succeeded",
    elapsed_s: 1,
    engine_size: 4096,
    rows: [phase("Building engine", { id: 1, start_s: 0, end_s: 1, status: "done" })],
    engine_json: engineJson,
  });
}

const engineBtn = () => [...el.querySelectorAll(".trtw-seg-btn")].find((b) => b.textContent === "Engine");
/** The Engine button can be seen and used (without a report it is invisible but keeps its place). */
const engineShown = () => {
  const b = engineBtn();
  return !b.hidden && b.style.visibility !== "hidden" && !b.disabled;
};

describe("parsing and the table's model", () => {
  it("reads the report and tolerates junk", () => {
    expect(parseEngine("")).toBeNull();
    expect(parseEngine("{not json")).toBeNull();
    expect(parseEngine('{"layers": 3}')).toBeNull();
    const r = parseEngine(report(4));
    expect(r.layers).toHaveLength(4);
    expect(r.memory.weights).toBe(2048);
    expect(precisionMix(r.layers)).toEqual([
      ["FP16", 3],
      ["INT8", 1],
    ]);
  });

  it("filters on any column and on fused ONNX nodes, sorts both ways", () => {
    const { layers } = parseEngine(report(30));
    expect(filterSort(layers, "relu_7", "index", false).map((l) => l.name)).toEqual(["layer_00007"]);
    expect(filterSort(layers, "reformat", "index", false)).toHaveLength(10);
    const byTactic = filterSort(layers, "", "tactic", false).map((l) => l.tactic);
    expect(byTactic).toEqual([...byTactic].sort((a, b) => a.localeCompare(b)));
    expect(filterSort(layers, "", "index", true)[0].index).toBe(29);
  });
});

describe("the Engine view", () => {
  it("is a third view beside Tree and Timeline once the build has a report", () => {
    const model = finished("");
    mount(model);
    expect(engineShown()).toBe(false);
    // in the layout from the start (the controls are right-aligned): its coming moves neither Tree nor Timeline
    expect(engineBtn().hidden).toBe(false);
    expect(engineBtn().style.visibility).toBe("hidden");
    expect(engineBtn().getAttribute("aria-hidden")).toBe("true");
    const before = [...el.querySelectorAll(".trtw-seg-btn")];
    model.set("engine_json", report(12));
    expect(engineShown()).toBe(true);
    expect(engineBtn().getAttribute("aria-hidden")).toBeNull();
    expect([...el.querySelectorAll(".trtw-seg-btn")]).toEqual(before);
    engineBtn().click();
    expect(engineBtn().getAttribute("aria-pressed")).toBe("true");
    const view = el.querySelector(".trtw-engine");
    expect(view.hidden).toBe(false);
    expect(el.querySelector(".trtw-tree").hidden).toBe(true);
    const chips = [...el.querySelectorAll(".trtw-engine-chip")].map((c) => c.textContent);
    expect(chips).toContain("12 layers");
    expect(chips).toContain(`2.0${NB}KiB weights`);
    expect(chips).toContain(`4.0${NB}KiB engine`);
    expect(chips.some((c) => c.endsWith(" FP16"))).toBe(true);
  });

  it("offers the Engine view in a view made after the build ended (a saved notebook, a re-render)", () => {
    mount(finished(report(3)));
    expect(engineShown()).toBe(true);
  });

  it("sorts on a header click, filters as you type, and shows a layer's fused ONNX nodes", () => {
    mount(finished(report(50)));
    engineBtn().click();
    const names = () => [...el.querySelectorAll(".trtw-engine-rows .trtw-engine-name")].map((c) => c.textContent);
    expect(names()[0]).toBe("layer_00000");
    el.querySelector(".trtw-engine-head .trtw-engine-index").click(); // again: descending
    expect(names()[0]).toBe("layer_00049");
    expect(el.querySelector(".trtw-engine-head .trtw-engine-index").getAttribute("aria-sort")).toBe("descending");
    const filter = el.querySelector(".trtw-engine-filter");
    filter.value = "relu_13";
    filter.dispatchEvent(new Event("input"));
    expect(names()).toEqual(["layer_00013"]);
    expect(el.querySelector(".trtw-engine-count").textContent).toBe("1 of 50 layers match");
    el.querySelector(".trtw-engine-rows .trtw-engine-row").click();
    const nodes = [...el.querySelectorAll(".trtw-engine-detail li")].map((li) => li.textContent);
    expect(nodes).toEqual(["conv_13", "relu_13"]);
    el.querySelector(".trtw-engine-rows .trtw-engine-row").click(); // closes it
    expect(el.querySelectorAll(".trtw-engine-detail li")).toHaveLength(0);
  });

  it("renders only the rows in view for ten thousand layers", () => {
    const view = new EngineView();
    document.body.append(view.el);
    const text = report(10000);
    const started = performance.now();
    view.update(text);
    const took = performance.now() - started;
    const rendered = view.el.querySelectorAll(".trtw-engine-rows .trtw-engine-row").length;
    expect(rendered).toBeGreaterThan(0);
    expect(rendered).toBeLessThan(100);
    expect(view.spacer.style.height).toBe(`${10000 * ROW_PX}px`);
    view.scroller.scrollTop = 5000 * ROW_PX;
    view.renderRows(false);
    const first = /** @type {HTMLElement} */ (view.el.querySelector(".trtw-engine-rows .trtw-engine-row"));
    expect(Number(first.dataset.position)).toBeGreaterThan(4900);
    expect(took).toBeLessThan(5000); // generous: jsdom on a shared machine; bench/ measures Chromium
    view.el.remove();
  });

  it("shows names from the model literally", () => {
    const evil = "<img src=x onerror=alert(1)>";
    const text = JSON.stringify({
      layers: [{ name: evil, type: evil, precision: evil, format: evil, tactic: evil, onnx_nodes: [evil] }],
      memory: {},
      notes: [evil],
    });
    mount(finished(text));
    engineBtn().click();
    el.querySelector(".trtw-engine-rows .trtw-engine-row").click();
    expect(el.querySelector(".trtw-engine-rows .trtw-engine-name").textContent).toBe(evil);
    expect(el.querySelector(".trtw-engine-detail li").textContent).toBe(evil);
    expect(el.querySelector("img")).toBeNull();
    expect(document.querySelector("img")).toBeNull();
  });

  it("goes back to the tree when a new build clears the report", () => {
    const model = finished(report(3));
    mount(model);
    engineBtn().click();
    model.set("engine_json", "");
    expect(engineShown()).toBe(false);
    expect(el.querySelector(".trtw-engine").hidden).toBe(true);
    expect(el.querySelector(".trtw-tree").hidden).toBe(false);
  });
});

describe("Δ last build", () => {
  const delta = (d, basis = "build of 2026-12-06 05:43, 1.3 s") => report(4, { delta: d, delta_basis: basis });
  const line = () => el.querySelector(".trtw-engine-delta");

  it("says what changed in the engine from the last matching build, with units", () => {
    mount(
      finished(
        delta({
          layers: -8,
          precision: { FP32: -8, FP16: 0 },
          memory: { weights: -18432, engine_size: -47002, activations: 0 },
        }),
      ),
    );
    engineBtn().click();
    expect(line().hidden).toBe(false);
    expect(line().textContent).toBe(
      `\u0394 last build: \u22128 layers, FP32 \u22128, weights \u221218.0${NB}KiB, engine \u221245.9${NB}KiB`,
    );
    expect(line().title).toBe(
      "Compared with the build of 2026-12-06 05:43, 1.3 s of the same model, options and backend",
    );
  });

  it("says the engine is the same, and shows nothing without a past build", () => {
    const model = finished(delta({ layers: 0, precision: {}, memory: {} }));
    mount(model);
    engineBtn().click();
    expect(line().textContent).toBe("\u0394 last build: same layer count, precisions and memory");
    model.set("engine_json", report(4));
    expect(line().hidden).toBe(true);
    expect(line().textContent).toBe("");
  });

  it("reads growth with a plus, ignores what is not a delta, and shows names literally", () => {
    expect(deltaText(parseDelta({ layers: 1, precision: { FP16: 1200 }, memory: { weights: 3 << 20 } }))).toBe(
      `\u0394 last build: +1 layer, FP16 +1,200, weights +3.0${NB}MiB`,
    );
    for (const bad of [null, "x", [], { layers: "1" }, { precision: {} }]) expect(parseDelta(bad)).toBeNull();
    expect(parseDelta({ layers: 0, precision: { a: "1", b: Number.NaN }, memory: [] })).toEqual({
      layers: 0,
      precision: [],
      memory: {},
    });
    mount(finished(delta({ layers: 0, precision: { "<b>x</b>\u202e": 2 }, memory: {} }, "<img src=x>")));
    engineBtn().click();
    expect(line().textContent).toContain("<b>x</b>\u202e +2");
    expect(line().querySelector("b")).toBeNull();
    expect(line().title).toContain("<img src=x>");
  });
});
