// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import {
  escapeControls,
  escapeLines,
  fmtBytes,
  fmtDelta,
  fmtDuration,
  fmtQuiet,
  keepUnits,
  meaningfulDelta,
  niceCeil,
  percent,
} from "../../src/shared/format.js";
import { NB, useDom } from "../helpers.js";

useDom();

describe("formatters", () => {
  it("formats durations, deltas and sizes", () => {
    expect(fmtDuration(0.25)).toBe(`250${NB}ms`);
    expect(fmtDuration(12.34)).toBe(`12.3${NB}s`);
    expect(fmtDuration(125)).toBe(`2m${NB}05s`);
    expect(fmtDuration(3720)).toBe(`1h${NB}02m`);
    expect(fmtDelta(1.23)).toBe(`+1.2${NB}s`);
    expect(fmtDelta(-0.4)).toBe(`\u2212400${NB}ms`); // the units durations use
    expect(fmtBytes(2.4 * 1024 * 1024)).toBe(`2.4${NB}MiB`); // binary units, named as such (as the CLI)
    expect(fmtBytes(97.9 * 1024 * 1024)).toBe(`97.9${NB}MiB`);
    expect(fmtBytes(1023.99 * 1024)).toBe(`1.0${NB}MiB`); // never `1024.0${NB}KiB`
    expect(fmtBytes(512)).toBe(`512${NB}B`);
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
    expect(fmtQuiet(12.7)).toBe(`no callback for 12${NB}s`);
    expect(fmtQuiet(125)).toBe(`no callback for 2m${NB}05s`);
  });
});

describe("escaping untrusted names (the terminal's list: trt_widget/_format.py)", () => {
  it("shows controls, separators, bidi and invisible characters as escapes, as the terminal does", () => {
    expect(escapeControls("a\u202eb")).toBe("a\\u202eb"); // RIGHT-TO-LEFT OVERRIDE
    expect(escapeControls("a\u009bb")).toBe("a\\x9bb"); // C1 CSI
    expect(escapeControls("a\u2028b\u2029c")).toBe("a\\u2028b\\u2029c");
    expect(escapeControls("\u200b\ufeff\u061c\u200e\u200f\u2066\u2069")).toBe(
      "\\u200b\\ufeff\\u061c\\u200e\\u200f\\u2066\\u2069",
    );
    expect(escapeControls("\x1b[31m\x7f")).toBe("\\x1b[31m\\x7f");
    expect(escapeControls("x\u{e0041}")).toBe("x\\U000e0041"); // a tag character, invisible
    expect(escapeControls("x\ud800y")).toBe("x\\ud800y"); // a lone surrogate
  });

  it("leaves ordinary text alone, other scripts and emoji included", () => {
    for (const ok of ["conv1/Relu", "Реле 层 طبقة", "a\u200db", "\u{1f600}", "é"]) {
      expect(escapeControls(ok)).toBe(ok);
    }
    expect(escapeControls(undefined)).toBe("");
  });

  it("keeps the line breaks of multi-line text and escapes the rest", () => {
    expect(escapeLines("first\nsecond \u202eline\r")).toBe("first\nsecond \\u202eline\\x0d");
  });
});

describe("numbers keep their units (issue 39, eighth trial 1)", () => {
  it("joins every formatted number to its unit with a no-break space", () => {
    for (const v of [fmtDuration(0.373), fmtDuration(12.3), fmtDuration(125), fmtDuration(3725), fmtBytes(685_875)]) {
      expect(v).not.toContain(" ");
      expect(v).toContain(NB);
    }
    expect(fmtDelta(-0.373)).toBe(`\u2212373${NB}ms`);
  });

  it("joins them in Python's prose too (as trt_widget/_format.py keep_units), nowhere else", () => {
    expect(keepUnits("ended 0.2 s after stop(), 3 min 04.2 s, 669.8 KiB, 20 % of 4 steps")).toBe(
      `ended 0.2${NB}s after stop(), 3${NB}min${NB}04.2${NB}s, 669.8${NB}KiB, 20${NB}% of 4 steps`,
    );
    expect(keepUnits("layer 5 scale, 2 Seconds, v2 sums")).toBe("layer 5 scale, 2 Seconds, v2 sums");
  });
});
