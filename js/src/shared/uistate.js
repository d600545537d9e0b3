// The UI state a model's views share (collapse choices, tree or timeline, log panel), so a second view of
// the same widget, or a re-rendered one, opens as the user left it.

/**
 * Per-model UI state, shared by all views of a model.
 * @typedef {object} UiState
 * @property {Map<string, boolean>} expanded the user's collapse choices: row key -> expanded
 * @property {"tree" | "timeline" | "engine"} mode
 * @property {boolean | null} logsOpen the user's choice for the log panel, null if none
 */

/** @type {WeakMap<object, UiState>} */
const uiStateByModel = new WeakMap();

/**
 * @param {unknown} model
 * @returns {UiState}
 */
export function uiStateFor(model) {
  let s = model && typeof model === "object" ? uiStateByModel.get(model) : undefined;
  if (!s) {
    s = { expanded: new Map(), mode: "tree", logsOpen: null };
    if (model && typeof model === "object") uiStateByModel.set(model, s);
  }
  return s;
}
