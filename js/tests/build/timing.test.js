// The "Now" line says what TensorRT's autotuner is timing during a silent step (activity.timing, from VERBOSE
// lines read in Python), next to the running path.
import { describe, expect, it } from "vitest";
import { Header } from "../../src/build/header.js";
import { fmtTiming } from "../../src/shared/format.js";
import { NB } from "../helpers.js";

describe("what a silent step is timing", () => {
  it("names the layer, the runner kind, for how long and how many tactics", () => {
    const timing = {
      layer: "{ForeignNode[transformer.h.0.attn.bias.../Cast]}",
      runner: "Myelin",
      since_s: 10,
      tactics: 0,
    };
    expect(fmtTiming(timing, 570)).toBe(
      `timing {ForeignNode[transformer.h.0.attn.bias.../Cast]} (Myelin) for 9m${NB}20s`,
    );
    expect(fmtTiming({ ...timing, tactics: 1 }, 15)).toBe(
      `timing {ForeignNode[transformer.h.0.attn.bias.../Cast]} (Myelin) for 5${NB}s, 1 tactic timed`,
    );
    expect(fmtTiming({ layer: "Gather_25", runner: "", since_s: 1, tactics: 3 }, 3.5)).toBe(
      `timing Gather_25 for 2${NB}s, 3 tactics timed`,
    );
  });

  it("shows nothing for a missing or malformed value", () => {
    expect(fmtTiming(null, 5)).toBe("");
    expect(fmtTiming({ layer: 3, since_s: 1 }, 5)).toBe("");
    expect(fmtTiming("timing", 5)).toBe("");
  });

  it("joins the running path in the Now line while live, and leaves it when the build ends", () => {
    const header = new Header();
    header.setPath([{ name: "Building engine", step: 0, numSteps: 1 }]);
    const activity = {
      last_callback_s: 0,
      timing: { layer: "Conv_42", runner: "CaskConvolution", since_s: 2, tactics: 7 },
    };
    header.tick(62, "running", true, null, null, activity);
    expect(header.pathEl.textContent).toBe(
      `Now: Building engine \u00b7 timing Conv_42 (CaskConvolution) for 1m${NB}00s, 7 tactics timed`,
    );
    header.tick(63, "succeeded", false, null, null, null);
    expect(header.pathEl.textContent).toBe("Now: Building engine");
  });
});
