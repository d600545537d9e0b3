// Entry of the benchmark bundle (js/dist/bench.js, not shipped): the anywidget entry plus a handle on the
// view, so bench/p7_page.js can drive UI state (expand every group, switch to the timeline).

import { TrtView } from "./build/view.js";

export { default } from "./build/widget.js";
export { TrtView };

/**
 * A view without anywidget.
 * @param {import("./build/widget.js").Model} model
 * @param {HTMLElement} el
 * @returns {TrtView}
 */
export function createView(model, el) {
  return new TrtView(model, el);
}
