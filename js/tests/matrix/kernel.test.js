// @vitest-environment jsdom
// The matrix view (also the watch widget's) when its kernel goes away: restart, shutdown, a closed comm.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import matrix from "../../src/matrix/matrix.js";
import { fakeModel, matrixRow, NB } from "../helpers.js";

const row = (id, extra = {}) => matrixRow(id, { elapsed_s: 5, ...extra });

// one build of each open status, and one that finished
const openAndDone = () => [
  row(0),
  row(1, { status: "queued", phase: null, elapsed_s: 1 }),
  row(2, { status: "cancelling", elapsed_s: 3 }),
  row(3, { status: "succeeded", phase: null, elapsed_s: 4, engine_size: 2048, detail: "built" }),
];

const buildTraits = {
  status: "running",
  status_detail: "",
  elapsed_s: 5,
  phases_json: JSON.stringify([
    { id: 0, name: "Building engine", parent: null, depth: 0, step: 1, num_steps: 6, start_s: 0, end_s: null },
  ]),
  engine_size: 0,
  error: "",
  logs: [],
  cancel: null,
  can_force: true,
};

let clock;
let el;
let destroy;
beforeEach(() => {
  vi.useFakeTimers();
  clock = 1000;
  vi.spyOn(performance, "now").mockImplementation(() => clock);
});
afterEach(() => {
  if (destroy) destroy();
  destroy = null;
  document.body.replaceChildren();
  vi.useRealTimers();
  vi.restoreAllMocks();
});
const advance = (ms) => {
  clock += ms;
  vi.advanceTimersByTime(ms);
};

function render(manager, rows = openAndDone(), extra = {}) {
  const model = fakeModel({ status: "running", rows_json: JSON.stringify(rows), expanded: [], ...extra });
  if (manager) model.widget_manager = manager;
  el = document.createElement("div");
  document.body.append(el);
  destroy = matrix.render(/** @type {any} */ ({ model, el }));
  return model;
}

const trs = () => [...el.querySelectorAll("tr.trtw-mx-row")];
const cell = (tr, cls) => tr.querySelector(cls).textContent;
const stopAll = () => el.querySelector(".trtw-mx-stop-all");

/** Builds 0-2 (open when the kernel went) show ended with `text`, their clocks stopped at `times`. */
function expectEnded(model, text, times) {
  const [running, queued, cancelling, done] = trs();
  for (const [tr, at] of [
    [running, times[0]],
    [queued, times[1]],
    [cancelling, times[2]],
  ]) {
    expect(tr.dataset.status).toBe("ended");
    expect(cell(tr, ".trtw-badge")).toBe("ended");
    expect(cell(tr, ".trtw-mx-phase-name")).toBe(text);
    expect(tr.querySelector(".trtw-bar").hidden).toBe(true);
    expect(cell(tr, ".trtw-mx-elapsed")).toBe(at);
    const stop = tr.querySelector(".trtw-mx-stop");
    expect(stop.hidden).toBe(false);
    expect(stop.disabled).toBe(true);
  }
  expect(done.dataset.status).toBe("succeeded"); // a finished build's result stays true
  expect(cell(done, ".trtw-mx-elapsed")).toBe(`4.0${NB}s`);
  expect(stopAll().hidden).toBe(false);
  expect(stopAll().disabled).toBe(true);
  expect(cell(el, ".trtw-mx-counts")).toBe("3 ended, 1 succeeded");
  advance(10_000);
  expect(trs().map((tr) => cell(tr, ".trtw-mx-elapsed"))).toEqual([...times, `4.0${NB}s`]); // the clocks stopped
  for (const tr of trs()) tr.querySelector(".trtw-mx-stop").click();
  stopAll().click();
  expect(model.sent).toEqual([]);
}

describe("the matrix view when its kernel is gone", () => {
  it("a kernel restart (the manager marks the model disconnected) ends every open build", () => {
    const model = render({ kernel: { status: "busy", isDisposed: false } });
    advance(2000);
    expect(cell(trs()[0], ".trtw-mx-elapsed")).toBe(`7.0${NB}s`);
    model.widget_manager.kernel.status = "restarting";
    model.trigger("comm_live_update");
    expectEnded(model, "the kernel restarted during this build", [`7.0${NB}s`, `3.0${NB}s`, `5.0${NB}s`]);
    expect(vi.getTimerCount()).toBe(0); // ticker and kernel poll both stopped
    // whatever the dead kernel's last snapshot said, those builds stay ended
    model.set("rows_json", JSON.stringify(openAndDone()));
    expect(trs().map((tr) => tr.dataset.status)).toEqual(["ended", "ended", "ended", "succeeded"]);
    expect(cell(trs()[0], ".trtw-mx-elapsed")).toBe(`7.0${NB}s`);
  });

  it("a kernel shut down (the manager's kernel goes away) ends every open build at the next poll", () => {
    const manager = { kernel: { status: "busy", isDisposed: false } };
    const model = render(manager);
    advance(1000);
    expect(trs()[0].dataset.status).toBe("running");
    manager.kernel = null;
    advance(1000);
    expectEnded(model, "the kernel shut down during this build", [`7.0${NB}s`, `3.0${NB}s`, `5.0${NB}s`]);
  });

  it("a closed comm ends every open build", () => {
    const model = render(null);
    advance(500);
    model.trigger("comm:close");
    expectEnded(model, "the widget's connection to the kernel closed during this build", [
      `5.5${NB}s`,
      `1.5${NB}s`,
      `3.5${NB}s`,
    ]);
  });

  it("an expanded build's phase tree ends too, and one opened afterwards", () => {
    const model = render({ kernel: { status: "idle" } }, [row(0), row(1)], {
      details_json: JSON.stringify({ 0: buildTraits, 1: buildTraits }),
    });
    model.set("expanded", [0]);
    const detail = (id) => el.querySelector(`tr.trtw-mx-detail[data-build="${id}"]`);
    expect(detail(0).querySelector(".trtw-badge").textContent).toBe("Running");
    model.trigger("comm_live_update");
    expect(detail(0).querySelector(".trtw-badge").textContent).toBe("Ended");
    expect(detail(0).querySelector(".trtw-detail").textContent).toBe("the kernel restarted during this build");
    expect(detail(0).querySelector(".trtw-stop").disabled).toBe(true);
    trs()[1].querySelector(".trtw-mx-toggle").click();
    expect(detail(1).querySelector(".trtw-badge").textContent).toBe("Ended");
    expect(model.sent).toEqual([{ type: "expand", build: 1, open: true }]);
  });

  it("a finished matrix stays as it was; a gone kernel leaves no listener behind", () => {
    const done = [row(0, { status: "succeeded", phase: null, detail: "built" })];
    const model = render({ kernel: { status: "idle" } }, done, { status: "done" });
    model.trigger("comm_live_update");
    model.widget_manager.kernel = null;
    advance(2000);
    expect(trs()[0].dataset.status).toBe("succeeded");
    expect(cell(trs()[0], ".trtw-badge")).toBe("succeeded");
    expect(stopAll().hidden).toBe(true);
    destroy();
    destroy = null;
    expect(model.listenerCount()).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
