// @vitest-environment jsdom
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { deltaLabel } from "../../src/build/tree.js";
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
    el.querySelector(".trtw-seg-btn:nth-child(2)").click(); // timeline too
    expect(el.querySelector(".trtw-tl-bar text").textContent).toBe(evil);
    expect(el.querySelector("img")).toBeNull();
    expect(document.querySelector("img")).toBeNull();
  });

  it("shows bidi overrides, separators and C1 controls in names, logs and errors escaped (issue 35)", () => {
    const name = "conv\u202eevil\u009b31m\u2028forged";
    const shown = "conv\\u202eevil\\x9b31m\\u2028forged";
    mount(
      fakeModel({
        status: "failed",
        elapsed_s: 1,
        error: `node ${name}\nsecond line`,
        rows: [phase(name, { id: 1, start_s: 0, end_s: 1, status: "failed" })],
        logs: [{ severity: "ERROR", message: `Node name: ${name}`, t: 0.5 }],
      }),
    );
    expect(rows()[0].querySelector(".trtw-name").textContent).toBe(shown);
    expect(el.querySelector(".trtw-log-msg").textContent).toBe(`Node name: ${shown}`);
    expect(el.querySelector(".trtw-error").textContent).toBe(`node ${shown}\nsecond line`);
    el.querySelector(".trtw-seg-btn:nth-child(2)").click(); // timeline too
    expect(el.querySelector(".trtw-tl-bar text").textContent).toBe(shown);
    expect(el.textContent).not.toMatch(/[\u202e\u009b\u2028]/);
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
    expect(line.querySelector(".trtw-log-sev").title).toMatch(
      /^TensorRT logged this as ERROR: .*cancelled by the user/,
    );
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
  it("shows no history delta for a phase a build that did not succeed cut short", () => {
    mount(
      fakeModel({
        status: "cancelled",
        elapsed_s: 12,
        rows: [
          phase("A", { id: 1, start_s: 0, end_s: 1 }),
          phase("Determining refit engines", {
            id: 2,
            start_s: 1,
            end_s: 2,
            step: 1,
            num_steps: 4,
            status: "cancelled",
          }),
        ],
        history_delta: { 1: -0.5, 2: -10.1 },
      }),
    );
    expect(txt(rowNamed("A"), ".trtw-note")).toBe(`\u2212500${NB}ms`); // finished: a fair comparison
    expect(txt(rowNamed("Determining refit engines"), ".trtw-note")).toBe(""); // not a speed-up
  });

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
    expect(txt(rowNamed("A"), ".trtw-note")).toBe(`+1.2${NB}s`);
    expect(rowNamed("A").querySelector(".trtw-note").title).toBe(`1.2${NB}s slower than the build of 2026-12-01 10:00`);
    expect(txt(rowNamed("B"), ".trtw-note")).toBe(`\u2212400${NB}ms`);
    expect(txt(rowNamed("C"), ".trtw-note")).toBe(""); // 10 ms: not worth a number
    expect(el.querySelector(".trtw-colhead").textContent).toContain("\u0394 last build");
    expect(el.querySelector(".trtw-peak").textContent).toBe(`memory peak 300.0${NB}MiB`);
    const tip = el.querySelector(".trtw-res").title;
    expect(tip).toContain("the builder process (pid 42)");
    expect(tip).toContain("CPU now: 99 %");
    expect(el.querySelector(".trtw-spark-rss").getAttribute("points").split(" ")).toHaveLength(3);
  });

  it("says which past build the deltas compare with, after the build too (a first build in a fresh venv)", () => {
    // the seventh newcomer trial: "Δ last build +189 ms" on the first build in a new venv, against a build of
    // another venv (the history is per user); once the build ended nothing said which build that was
    const created = Date.now() / 1000 - 60;
    const said = "build of 2026-12-06 15:30, 1.4 s";
    mount(
      fakeModel({
        status: "succeeded",
        elapsed_s: 3,
        rows: [phase("A", { id: 1, start_s: 0, end_s: 3 })],
        history_delta: { 1: 0.189 },
        history_basis: { created, said },
        eta: null,
      }),
    );
    const head = el.querySelector(".trtw-colhead-delta");
    expect(head.textContent).toMatch(/^\u0394 vs \d\d:\d\d build$/);
    expect(head.title).toContain("on this machine");
    expect(head.title).toContain("per user");
    expect(head.title).toContain(said);
    expect(rowNamed("A").querySelector(".trtw-note").title).toBe(`189${NB}ms slower than ${said}`);
  });

  it("dates an older past build by its day", () => {
    expect(deltaLabel(Date.UTC(2026, 11, 1, 12) / 1000, new Date(Date.UTC(2026, 11, 6, 12)))).toBe(
      "\u0394 vs 1 Dec build",
    );
    expect(deltaLabel(null)).toBe("\u0394 last build");
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
    expect(el.querySelector(".trtw-peak").textContent).toContain(`GPU 2.0${NB}GiB`);
    expect(el.querySelector(".trtw-res").title).toContain(`GPU memory of ${gpuScope}: dashed line.`);
  });
});

describe("timeline", () => {
  it("renders one rect per instance with a <title>, and a group as one rect", () => {
    const model = fakeModel({ status: "succeeded", elapsed_s: 4, rows: sampleTree() });
    mount(model);
    el.querySelector(".trtw-seg-btn:nth-child(2)").click();
    expect(el.querySelector(".trtw-tree").hidden).toBe(true);
    const tl = el.querySelector(".trtw-timeline");
    expect(tl.hidden).toBe(false);
    const rects = tl.querySelectorAll("rect");
    expect(rects).toHaveLength(4);
    const titles = [...tl.querySelectorAll("rect > title")].map((t) => t.textContent);
    expect(titles).toHaveLength(4);
    expect(titles[1]).toContain("Parsing network");
    expect(titles[1]).toContain(`500${NB}ms`);
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

  it("says a phase TensorRT ended before its last step is done in the tooltip, as the tree does", () => {
    const model = fakeModel({
      status: "succeeded",
      elapsed_s: 1,
      rows: [
        phase("Building engine", { id: 1, step: 5, num_steps: 6, start_s: 0, end_s: 0.642, status: "finished-early" }),
        phase("Timing tactics", {
          id: 2,
          parent: 1,
          depth: 1,
          step: 2,
          num_steps: 3,
          start_s: 0.1,
          end_s: 0.3,
          status: "finished-early",
        }),
      ],
    });
    mount(model);
    expect(txt(rowNamed("Building engine"), ".trtw-steps")).toBe("done");
    el.querySelector(".trtw-seg-btn:nth-child(2)").click();
    const titles = [...el.querySelectorAll(".trtw-timeline rect > title")].map((t) => t.textContent);
    expect(titles).toHaveLength(2);
    for (const t of titles) {
      expect(t).not.toMatch(/finished.early/);
      expect(t.split("\n").at(-1)).toBe("done");
    }
    // done, not "steps 5/6", which reads as unfinished
    expect(titles[0]).not.toContain("5/6");
    expect(titles[0].split("\n").slice(-2)).toEqual(["5 steps", "done"]);

    // a group of such phases: counted as finished, with no "finished early" beside
    const group = [phase("Build", { id: 1, start_s: 0, end_s: 6 })];
    for (let i = 0; i < 8; i++)
      group.push(
        phase("Timing tactics", {
          id: 10 + i,
          parent: 1,
          depth: 1,
          step: 2,
          num_steps: 3,
          start_s: i * 0.5,
          end_s: i * 0.5 + 0.4,
          status: "finished-early",
        }),
      );
    model.update({ rows: group, elapsed_s: 6 });
    const groupTitle = [...el.querySelectorAll(".trtw-timeline rect > title")].map((t) => t.textContent).at(-1);
    expect(groupTitle).toContain("8/8 finished");
    expect(groupTitle).not.toMatch(/finished.early/);
  });
});

describe("misc", () => {
  it("never uses HTML-parsing sinks in the source", () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const bundle = path.join(here, "..", "..", "..", "trt_widget", "static", "widget.js");
    const srcDir = path.join(here, "..", "..", "src");
    const files = readdirSync(srcDir, { recursive: true }).map(String);
    expect(files.filter((f) => f.endsWith(".js")).length).toBeGreaterThan(10); // every module, in every folder
    let src = files
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
    unmount();
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
    el.querySelector(".trtw-seg-btn:nth-child(2)").click();
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

describe("the status line (issue 39, eighth trial 1)", () => {
  it("keeps each number of Python's detail with its unit", () => {
    mount(fakeModel({ status: "cancelled", elapsed_s: 1, status_detail: "ended 0.2 s after stop()", rows: [] }));
    expect(el.querySelector(".trtw-detail").textContent).toBe(`ended 0.2${NB}s after stop()`);
  });
});
