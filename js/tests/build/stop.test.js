// @vitest-environment jsdom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { el, fakeModel, mount, sampleTree, stopBtn, useDom } from "../helpers.js";

useDom();

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

  it("says what a thread build's Stop will do, and what can be done instead of waiting", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    stopBtn().click();
    model.update({ status: "cancelling", cancel: { phase: "Optimizing", requested_at_s: 1 }, can_force: false });
    const notice = el.querySelector(".trtw-notice").textContent;
    expect(notice).toMatch(/stops when this step ends/);
    expect(notice).toMatch(/restart the kernel/);
    expect(notice).toMatch(/isolation="process"/);
    expect(stopBtn().title).toMatch(/cannot be stopped from outside/);
    model.set("can_force", true);
    expect(el.querySelector(".trtw-notice").textContent).not.toMatch(/restart the kernel/);
  });

  it("shows the kernel's answer to a Stop it read only after the build had ended", () => {
    const model = fakeModel({ status: "running", elapsed_s: 1, rows: sampleTree() });
    mount(model);
    stopBtn().click(); // while a blocking wait() holds the kernel: the click waits in its queue
    model.update({ status: "succeeded", elapsed_s: 4 }); // the build ends first; the "not reached" notice goes
    const notice = el.querySelector(".trtw-unacked");
    expect(notice.hidden).toBe(true);
    const text = "Stop arrived after the build had finished (succeeded in 4.0 s): nothing was stopped";
    model.receive({ type: "stop_outcome", text });
    expect(notice.hidden).toBe(false);
    expect(notice.textContent).toBe(text);
    model.receive({ type: "stop_outcome", text: 7 }); // anything else is ignored
    model.receive(null);
    expect(notice.textContent).toBe(text);
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
