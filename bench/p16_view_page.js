// P16-view page script: the shipped front end's Engine view applying a 10,000-layer engine report, timed.
// Loaded by p16_engine_view.py into headless Chromium; exposes window.runEngineBench(texts, repeats).
import { createView } from "/bench.js";
import { FakeModel } from "/p7_page.js";

const frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

/**
 * Time, `repeats` times after warm-ups: the `engine_json` trait arriving at a view that shows the Engine view
 * (parse, chips, sort, the rows in view) + forced layout; then sorting by name, filtering and expanding a layer.
 */
window.runEngineBench = async (texts, repeats) => {
  document.body.innerHTML = "";
  const el = document.createElement("div");
  el.style.width = "900px";
  document.body.append(el);
  const model = new FakeModel({ status: "succeeded", status_detail: "", elapsed_s: 1, phases_json: "[]",
    phases_seq: 0, engine_size: 0, error: "", logs: [], cancel: null, can_force: false, eta: null,
    history_delta: null, resources: null, engine_json: "" });
  const view = createView(model, el);
  const timed = (fn) => {
    const t0 = performance.now();
    fn();
    const t1 = performance.now();
    void el.offsetHeight;
    return [performance.now() - t0, t1 - t0];
  };
  const apply = [];
  const scripting = [];
  const sort = [];
  const filter = [];
  const expand = [];
  const warmup = 3;
  for (let k = 0; k < repeats + warmup; k++) {
    model.update({ engine_json: "" }); // a new build: the report goes away
    view.setMode("engine");
    await frame();
    const [t, s] = timed(() => {
      model.update({ engine_json: texts[k % texts.length] });
      view.setMode("engine");
    });
    await frame();
    const [ts] = timed(() => view.engine.sortBy("name"));
    await frame();
    const [tf] = timed(() => view.engine.setQuery("conv"));
    await frame();
    const [te] = timed(() => view.engine.toggle(view.engine.shown[0].index));
    await frame();
    view.engine.setQuery("");
    view.engine.sortBy("index");
    if (k >= warmup) {
      apply.push(t);
      scripting.push(s);
      sort.push(ts);
      filter.push(tf);
      expand.push(te);
    }
  }
  const rowsInDom = el.querySelectorAll(".trtw-engine-rows .trtw-engine-row").length;
  const layers = view.engine.report ? view.engine.report.layers.length : 0;
  const shown = !view.engine.el.hidden;
  view.destroy();
  return { apply, scripting, sort, filter, expand, rowsInDom, layers, shown };
};
