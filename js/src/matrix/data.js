// The matrix front end's data: its rows read from `rows_json` with every field checked, and the model-like
// adaptor through which an expanded row's TrtView reads one build's traits (from `details_json`).

import { num, str } from "../shared/format.js";

/**
 * @typedef {object} Row
 * @property {number} id
 * @property {string} model
 * @property {string} variant
 * @property {string} status
 * @property {string} detail
 * @property {number} elapsed_s
 * @property {number} engine_size
 * @property {string} error
 * @property {{name: string, step: number, num_steps: number} | null} phase
 * @property {boolean} can_force
 * @property {boolean} started false while the build waits in its queue, and for one that ended there
 */

/**
 * @param {unknown} text
 * @param {unknown} fallback
 * @returns {unknown}
 */
export function parse(text, fallback) {
  if (typeof text !== "string" || !text) return fallback;
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

/**
 * The rows of `rows_json`, with every field checked.
 * @param {unknown} value
 * @returns {Row[]}
 */
export function readRows(value) {
  const list = Array.isArray(value) ? value : [];
  /** @type {Row[]} */
  const rows = [];
  for (const r of list) {
    if (!r || typeof r !== "object" || typeof r.id !== "number") continue;
    const p = r.phase && typeof r.phase === "object" ? r.phase : null;
    rows.push({
      id: r.id,
      model: str(r.model),
      variant: str(r.variant),
      status: str(r.status) || "idle",
      detail: str(r.detail),
      elapsed_s: num(r.elapsed_s),
      engine_size: num(r.engine_size),
      error: str(r.error),
      phase: p ? { name: str(p.name), step: num(p.step), num_steps: num(p.num_steps) } : null,
      can_force: r.can_force === true,
      started: r.started !== false,
    });
  }
  return rows;
}

/**
 * A model-like object over one build's traits (those of BuildWidget, from `details_json`), so TrtView renders
 * an expanded row unchanged: get / on / off, and send, which names the build.
 */
export class BuildModelAdaptor {
  /**
   * @param {(msg: import("../shared/messages.js").RowsMessage) => void} send
   * @param {number} id
   */
  constructor(send, id) {
    /** @type {Record<string, unknown>} */
    this.values = {};
    /** @type {Map<string, (() => void)[]>} */
    this.listeners = new Map();
    this.sendFn = send;
    this.id = id;
  }

  /**
   * Take a new snapshot of the build's traits; fire `change:<name>` for each one that changed.
   * @param {unknown} traits
   */
  update(traits) {
    if (!traits || typeof traits !== "object") return;
    const changed = [];
    for (const [k, v] of Object.entries(traits)) {
      const old = this.values[k];
      if (old === v || (typeof v === "object" && JSON.stringify(old) === JSON.stringify(v))) continue;
      this.values[k] = v;
      changed.push(k);
    }
    for (const k of changed) for (const fn of [...(this.listeners.get(`change:${k}`) || [])]) fn();
  }

  /**
   * @param {string} name
   * @returns {any}
   */
  get(name) {
    return this.values[name];
  }

  /**
   * @param {string} event
   * @param {() => void} fn
   */
  on(event, fn) {
    const list = this.listeners.get(event) || [];
    list.push(fn);
    this.listeners.set(event, list);
  }

  /**
   * @param {string} event
   * @param {() => void} fn
   */
  off(event, fn) {
    const list = this.listeners.get(event) || [];
    const i = list.indexOf(fn);
    if (i >= 0) list.splice(i, 1);
  }

  /** @param {import("../shared/messages.js").ViewMessage} msg the tree's own message, sent naming its row */
  send(msg) {
    this.sendFn({ ...msg, build: this.id });
  }
}
