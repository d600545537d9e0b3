// The row-delta protocol between the pump and the view (pure: no DOM).
import { describe, expect, it } from "vitest";
import { RowSync } from "../../src/build/rowsync.js";

const row = (id, step = 0) => ({ id, name: `p${id}`, parent: null, depth: 0, step, num_steps: 4, start_s: id });
const delta = (seq, rows) => JSON.stringify({ seq, rows });

describe("RowSync", () => {
  it("starts from the whole list and applies the deltas that follow it", () => {
    const s = new RowSync();
    expect(s.loadFull(JSON.stringify([row(0), row(1)]), 3)).toBe(true);
    expect(s.applyDelta(delta(4, [row(1, 2), row(2)]))).toBe("applied");
    expect(s.rows.map((r) => [r.id, r.step])).toEqual([
      [0, 0],
      [1, 2],
      [2, 0],
    ]);
    expect(s.seq).toBe(4);
  });

  it("ignores a delta the whole list already includes and the same text twice", () => {
    const s = new RowSync();
    s.loadFull(JSON.stringify([row(0, 3)]), 5);
    expect(s.applyDelta(delta(5, [row(0, 1)]))).toBe("old");
    expect(s.rows[0].step).toBe(3);
    const d = delta(6, [row(0, 4)]);
    expect(s.applyDelta(d)).toBe("applied");
    expect(s.applyDelta(d)).toBe("none");
  });

  it("reports a gap when deltas were missed (a view created mid-build) and leaves the rows alone", () => {
    const s = new RowSync();
    s.loadFull(JSON.stringify([row(0)]), 1);
    expect(s.applyDelta(delta(7, [row(0, 3), row(1)]))).toBe("gap");
    expect(s.rows).toEqual([row(0)]);
    expect(s.seq).toBe(1);
  });

  it("re-reads the current delta after a new whole list (the delta may be newer)", () => {
    const s = new RowSync();
    const d = delta(3, [row(1, 1)]);
    s.loadFull(JSON.stringify([row(0)]), 0);
    expect(s.applyDelta(d)).toBe("gap");
    s.loadFull(JSON.stringify([row(0), row(1)]), 2);
    expect(s.applyDelta(d)).toBe("applied");
    expect(s.rows[1].step).toBe(1);
  });

  it("survives malformed text", () => {
    const s = new RowSync();
    s.loadFull("{not json", 1);
    expect(s.rows).toEqual([]);
    expect(s.applyDelta("nope")).toBe("none");
    expect(s.applyDelta(JSON.stringify({ seq: "x", rows: [] }))).toBe("none");
  });
});
