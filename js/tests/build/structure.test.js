// @vitest-environment node
// The phase structure is pure data: these tests run without a DOM.
import { describe, expect, it } from "vitest";
import { buildStructure, GROUP_MIN } from "../../src/build/structure.js";

/** A phase row as Python sends it (one element of the parsed phases_json). */
function row(id, name, opts = {}) {
  return {
    id,
    name,
    parent: opts.parent ?? null,
    step: opts.step ?? 0,
    num_steps: opts.num_steps ?? 0,
    start_s: opts.start_s ?? 0,
    end_s: opts.end_s ?? null,
    status: opts.status ?? (opts.end_s === undefined || opts.end_s === null ? "running" : "done"),
  };
}

describe("buildStructure", () => {
  it("nests rows under their parents in order and keys them by String(id)", () => {
    const s = buildStructure(
      [row(1, "Build"), row(2, "Parse", { parent: 1, end_s: 1 }), row(3, "Optimize", { parent: 1, start_s: 1 })],
      2,
    );
    expect(s.items.map((it) => it.key)).toEqual(["1"]);
    const root = s.byKey.get("1");
    expect(root.items.map((it) => it.name)).toEqual(["Parse", "Optimize"]);
    expect(s.byKey.get("2")).toMatchObject({ kind: "phase", parentKey: "1", status: "done", dur: 1, stop: 1 });
    expect(s.byKey.get("3")).toMatchObject({ running: true, stop: null, dur: 0 });
  });

  it(`folds runs of >= ${GROUP_MIN} same-name siblings into a group with a stable key`, () => {
    const rows = [row(1, "Build")];
    for (let i = 0; i < GROUP_MIN; i++) rows.push(row(10 + i, "Tactic", { parent: 1, start_s: i, end_s: i + 0.5 }));
    rows.push(row(99, "Tactic", { parent: 1, start_s: 9 })); // running
    const s = buildStructure(rows, 10);
    expect(s.groups.size).toBe(1);
    const g = s.groups.get("g:1:10");
    expect(g).toMatchObject({ kind: "group", name: "Tactic", count: GROUP_MIN + 1, finished: GROUP_MIN, running: 1 });
    expect(g.status).toBe("running");
    expect(g.sumFinished).toBeCloseTo(GROUP_MIN * 0.5);
    expect(s.byKey.get("1").items).toEqual([g]);
  });

  it("groups by consecutive siblings of the same parent only", () => {
    const s = buildStructure(
      [
        row(1, "R"),
        ...[0, 1, 2].map((i) => row(10 + i, "T", { parent: 1, end_s: 1 })),
        ...[0, 1, 2].map((i) => row(20 + i, "T", { end_s: 1 })), // other parent (root)
      ],
      1,
    );
    expect(s.groups.size).toBe(0);
  });

  it("skips malformed and duplicate rows and treats unknown parents and statuses defensively", () => {
    const s = buildStructure(
      [
        null,
        5,
        "x",
        { name: "no id" },
        row(1, "a", { status: "weird" }),
        row(2, "orphan", { parent: 99 }),
        row(1, "dup"),
      ],
      0,
    );
    expect(s.nodes.map((n) => n.name)).toEqual(["a", "orphan"]);
    expect(s.byKey.get("1").status).toBe("running");
    expect(s.items.map((it) => it.key)).toEqual(["1", "2"]);
    expect(buildStructure("not rows", 0).items).toEqual([]);
  });

  it("takes a finished row's missing end from the snapshot's elapsed time", () => {
    const s = buildStructure([row(1, "a", { start_s: 2, status: "cancelled" })], 5);
    expect(s.byKey.get("1")).toMatchObject({ status: "cancelled", dur: 3, stop: 5 });
  });
});
