// @vitest-environment jsdom
import { beforeEach, describe, expect, it, vi } from "vitest";
import widget from "../../src/build/widget.js";
import {
  el,
  fakeModel,
  mount,
  NB,
  phase,
  rowNamed,
  rows,
  sampleTree,
  stopBtn,
  txt,
  unmount,
  useDom,
} from "../helpers.js";

useDom();

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

  it("shows no build time while queued: the clock starts when the build does", () => {
    const model = fakeModel({ status: "queued", elapsed_s: 2.6, rows: [] });
    mount(model);
    const elapsed = el.querySelector(".trtw-elapsed");
    expect(elapsed.textContent).toBe("");
    advance(1000);
    expect(elapsed.textContent).toBe("");
    model.update({ status: "running", elapsed_s: 0.883 });
    expect(elapsed.textContent).toBe(`883${NB}ms`);
  });

  it("shows no build time for a build stopped while queued: it never started", () => {
    const model = fakeModel({ status: "queued", elapsed_s: 2.6, started: false, rows: [] });
    mount(model);
    const elapsed = el.querySelector(".trtw-elapsed");
    advance(3000);
    model.update({
      status: "cancelled",
      elapsed_s: 5.6,
      status_detail: "never started: stopped by user (Stop) while queued",
    });
    expect(elapsed.textContent).toBe("");
    expect(el.textContent).toContain("never started");
    model.update({ status: "cancelled", elapsed_s: 5.6, started: true }); // one that built shows its time
    expect(elapsed.textContent).toBe(`5.6${NB}s`);
  });

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
    expect(elapsed.textContent).toBe(`2.0${NB}s`);
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe(`1.0${NB}s`);
    advance(1500);
    expect(elapsed.textContent).toBe(`3.5${NB}s`);
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe(`2.5${NB}s`);
    expect(txt(rowNamed("Build"), ".trtw-time")).toBe(`3.5${NB}s`);
    expect(txt(rowNamed("Parse"), ".trtw-time")).toBe(`1.0${NB}s`); // finished: static

    // a new snapshot re-anchors the clock
    model.update({ elapsed_s: 3.6 });
    expect(elapsed.textContent).toBe(`3.6${NB}s`);
    advance(400);
    expect(elapsed.textContent).toBe(`4.0${NB}s`);
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
    expect(elapsed.textContent).toBe(`4.2${NB}s`);
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe(`3.1${NB}s`);
    expect(el.querySelector(".trtw-size").textContent).toBe(`engine 2.4${NB}MiB`);
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
    expect(quiet.textContent).toBe(`no callback for 12${NB}s`);
    expect(quiet.title).toMatch(/CPU/);
    model.update({ elapsed_s: 31, activity: { last_callback_s: 30.5 } });
    expect(quiet.hidden).toBe(true);
  });

  const liveBuild = (extra = {}) =>
    fakeModel({
      status: "running",
      elapsed_s: 5,
      eta: { total_s: 8, based_on: "", phases: {} },
      rows: [phase("Build", { id: 1, start_s: 0 }), phase("Tactics", { id: 2, parent: 1, start_s: 1 })],
      ...extra,
    });
  const expectEnded = (text, at) => {
    expect(el.querySelector(".trtw-badge").textContent).toBe("Ended");
    expect(el.querySelector(".trtw-detail").textContent).toBe(text);
    expect(stopBtn().hidden).toBe(false);
    expect(stopBtn().disabled).toBe(true);
    const elapsed = el.querySelector(".trtw-elapsed");
    expect(elapsed.textContent).toBe(at);
    expect(el.querySelector(".trtw-eta").hidden).toBe(true); // no "over ETA" for a build nobody runs
    advance(10_000);
    expect(elapsed.textContent).toBe(at); // the clock stopped
    expect(txt(rowNamed("Tactics"), ".trtw-time")).toBe(`${(Number.parseFloat(at) - 1).toFixed(1)}${NB}s`);
    // the rows that ran stopped with the kernel: not drawn as running (bold, brand-coloured bar), but marked
    for (const name of ["Build", "Tactics"]) {
      expect(rowNamed(name).dataset.status).toBe("interrupted");
      expect(txt(rowNamed(name), ".trtw-mark")).toBe("interrupted");
    }
    expect(el.querySelectorAll('.trtw-row[data-status="running"]').length).toBe(0);
  };

  it("a kernel restart mid-build (the manager marks the model disconnected) ends the view", () => {
    const model = liveBuild();
    model.widget_manager = { kernel: { status: "restarting", isDisposed: false } };
    mount(model);
    advance(2000);
    model.trigger("comm_live_update");
    expectEnded("the kernel restarted during this build", `7.0${NB}s`);
    stopBtn().click();
    expect(model.sent).toEqual([]);
    expect(vi.getTimerCount()).toBe(0); // ticker and kernel poll both stopped
    // whatever the dead kernel's last snapshot said, the view stays ended
    model.update({ elapsed_s: 5.5 });
    expect(el.querySelector(".trtw-badge").textContent).toBe("Ended");
  });

  it("a kernel shut down mid-build (the manager's kernel goes away) ends the view", () => {
    const model = liveBuild();
    const manager = { kernel: { status: "busy", isDisposed: false } };
    model.widget_manager = manager;
    mount(model);
    advance(1000);
    expect(el.querySelector(".trtw-badge").textContent).toBe("Running");
    manager.kernel = null;
    advance(1000); // the next poll
    expectEnded("the kernel shut down during this build", `7.0${NB}s`);
  });

  it("a closed comm ends a live view; a finished build's view stays as it was", () => {
    const live = liveBuild();
    mount(live);
    live.trigger("comm:close");
    expectEnded("the widget's connection to the kernel closed during this build", `5.0${NB}s`);
    unmount();
    el.remove();
    const done = fakeModel({
      status: "succeeded",
      elapsed_s: 4,
      status_detail: "built",
      rows: [phase("Build", { id: 1, start_s: 0, end_s: 4 })],
    });
    done.widget_manager = { kernel: { status: "idle" } };
    mount(done);
    done.trigger("comm_live_update");
    done.widget_manager.kernel = null;
    advance(2000);
    expect(el.querySelector(".trtw-badge").textContent).toBe("Succeeded");
    expect(el.querySelector(".trtw-detail").textContent).toBe("built");
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
      `Cancelling \u2014 waiting for the builder to finish the current step of Measuring tactic time (2${NB}s)`,
    );
    expect(stopBtn().disabled).toBe(true);
    advance(3000);
    expect(el.querySelector(".trtw-notice-text").textContent).toBe(
      `Cancelling \u2014 waiting for the builder to finish the current step of Measuring tactic time (5${NB}s)`,
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
    unmount();
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
    expect(el.querySelector(".trtw-eta").textContent).toBe(`ETA ~26${NB}s (based on build of 2024-05-01)`);
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe(`~7${NB}s left`);
    advance(2000);
    expect(el.querySelector(".trtw-eta").textContent).toBe(`ETA ~24${NB}s (based on build of 2024-05-01)`);
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe(`~5${NB}s left`);
  });
});

describe("no ETA", () => {
  it("shows no ETA and no time left while a build is cancelling", () => {
    const model = fakeModel({
      status: "running",
      elapsed_s: 4,
      eta: { total_s: 30, based_on: "", phases: { Tactics: 30 } },
      rows: [phase("Tactics", { id: 1, start_s: 1 })],
    });
    mount(model);
    expect(el.querySelector(".trtw-eta").textContent).toBe(`ETA ~26${NB}s`);
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe(`~27${NB}s left`);
    model.update({ status: "cancelling", elapsed_s: 5, cancel: { phase: "Tactics", requested_at_s: 5 } });
    expect(el.querySelector(".trtw-eta").hidden).toBe(true);
    expect(txt(rowNamed("Tactics"), ".trtw-note")).toBe("");
  });

  it("says why a first build has no ETA instead of showing nothing", () => {
    const why = "No ETA: this is the first build of this model with these options that the history knows.";
    const model = fakeModel({ status: "running", elapsed_s: 4, eta: { none: "first build", why } });
    mount(model);
    const eta = el.querySelector(".trtw-eta");
    expect(eta.hidden).toBe(false);
    expect(eta.textContent).toBe("no ETA: first build");
    expect(eta.title).toBe(why);
    model.update({ status: "succeeded", eta: null });
    expect(eta.hidden).toBe(true);
  });
});

describe("rendered view", () => {
  it("tells Python once per render that a front end shows the widget", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1 });
    const host = document.createElement("div");
    const end = widget.render(/** @type {any} */ ({ model, el: host }));
    expect(model.sent).toEqual([{ type: "view" }]);
    end();
    widget.render(/** @type {any} */ ({ model, el: host }))();
    expect(model.sent).toEqual([{ type: "view" }, { type: "view" }]);
  });
});
