// EngineView: the third view beside Tree and Timeline: what the engine holds (the `engine_json` trait, Python's
// EngineReport.to_dict()).  Summary chips, a layer table that sorts and filters, and the selected layer's fused
// ONNX nodes.  Only the rows in view are in the DOM (fixed row height, a spacer for the rest), so thousands of
// layers stay smooth.  Every text from the model goes through textContent.

import { h, setText } from "../shared/dom.js";
import { fmtBytes, num, str } from "../shared/format.js";

export const ROW_PX = 22; // one table row
const OVERSCAN = 8; // rows rendered above and below the visible ones
const VIEW_ROWS = 18; // the table's height in rows
const MAX_CELL = 300; // characters of a name shown in a cell (the JSON keeps them whole)

/**
 * @typedef {object} EngineLayerRow
 * @property {string} name
 * @property {string} type
 * @property {string} precision
 * @property {string} format
 * @property {string} tactic
 * @property {string[]} onnx_nodes
 * @property {number | null} stream
 * @property {number} index its place in the engine
 */

/** @typedef {"index" | "name" | "type" | "precision" | "tactic" | "nodes"} SortKey */

/** @type {[SortKey, string, string][]} key, label, what the column holds (the label's tooltip) */
const COLUMNS = [
  ["index", "#", "The layer's position in the engine"],
  ["name", "layer", "The layer's name"],
  ["type", "type", "The layer's type"],
  ["precision", "precision", "Input → output precision"],
  ["tactic", "tactic", "The kernel (tactic) TensorRT chose"],
  ["nodes", "fused", "How many ONNX nodes TensorRT fused into this layer"],
];

/**
 * A string cut for display.
 * @param {unknown} v
 * @param {number} [limit]
 * @returns {string}
 */
function cut(v, limit = MAX_CELL) {
  const s = str(v);
  return s.length > limit ? `${s.slice(0, limit)}\u2026` : s;
}

/**
 * "Δ last build" for the engine (Python's engine_delta): this engine − the matched past build's.
 * @typedef {object} EngineDelta
 * @property {number} layers
 * @property {[string, number][]} precision output precision -> change in layer count
 * @property {Record<string, number>} memory memory key -> change in bytes
 */

/** @type {[string, string][]} the engine's memory in the delta's line, in Python's words and order */
const DELTA_MEMORY = [
  ["weights", "weights"],
  ["activations", "activations"],
  ["host_persistent", "host persistent"],
  ["device_persistent", "device persistent"],
  ["scratch", "scratch"],
  ["engine_size", "engine"],
];

/**
 * @param {unknown} v
 * @returns {v is number}
 */
const finite = (v) => typeof v === "number" && Number.isFinite(v);

/**
 * The `delta` of `engine_json`, or null where there is none (no past build to compare with) or it is not one.
 * @param {unknown} raw
 * @returns {EngineDelta | null}
 */
export function parseDelta(raw) {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  const d = /** @type {Record<string, unknown>} */ (raw);
  if (!finite(d.layers)) return null;
  /** @param {unknown} v @returns {[string, number][]} */
  const counts = (v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.entries(v)
          .filter((e) => finite(e[1]) && e[1] !== 0)
          .slice(0, 20)
      : [];
  return { layers: d.layers, precision: counts(d.precision), memory: Object.fromEntries(counts(d.memory)) };
}

/**
 * @param {number} n
 * @returns {string} "+1,234" / "−1,234"
 */
function signed(n) {
  return `${n > 0 ? "+" : "−"}${Math.abs(n).toLocaleString("en-US")}`;
}

/**
 * The delta as one line, as the terminal prints it: "Δ last build: −8 layers, FP32 −8, weights −18.0 KiB".
 * @param {EngineDelta} delta
 * @returns {string}
 */
export function deltaText(delta) {
  const parts = [];
  if (delta.layers) parts.push(`${signed(delta.layers)} layer${Math.abs(delta.layers) === 1 ? "" : "s"}`);
  for (const [p, n] of delta.precision) parts.push(`${cut(p, 20)} ${signed(n)}`);
  for (const [key, label] of DELTA_MEMORY) {
    const v = delta.memory[key];
    if (v) parts.push(`${label} ${v > 0 ? "+" : "\u2212"}${fmtBytes(Math.abs(v))}`);
  }
  return `\u0394 last build: ${parts.length ? parts.join(", ") : "same layer count, precisions and memory"}`;
}

/**
 * Parse `engine_json` into rows, summary facts and notes (null when there is no report).
 * @param {unknown} text
 * @returns {{layers: EngineLayerRow[], memory: Record<string, number | null>, total: number,
 *   notes: string[], source: string, delta: EngineDelta | null, deltaBasis: string} | null}
 */
export function parseEngine(text) {
  const raw = str(text);
  if (!raw) return null;
  let data;
  try {
    data = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!data || typeof data !== "object" || !Array.isArray(data.layers)) return null;
  /** @type {EngineLayerRow[]} */
  const layers = [];
  for (const [index, l] of data.layers.entries()) {
    if (!l || typeof l !== "object") continue;
    layers.push({
      name: str(l.name),
      type: str(l.type),
      precision: str(l.precision),
      format: str(l.format),
      tactic: str(l.tactic),
      onnx_nodes: Array.isArray(l.onnx_nodes) ? l.onnx_nodes.map(str) : [],
      stream: typeof l.stream === "number" ? l.stream : null,
      index,
    });
  }
  /** @type {Record<string, number | null>} */
  const memory = {};
  if (data.memory && typeof data.memory === "object") {
    for (const [k, v] of Object.entries(data.memory)) memory[k] = typeof v === "number" ? v : null;
  }
  return {
    layers,
    memory,
    total: num(data.total_layers, layers.length),
    notes: Array.isArray(data.notes) ? data.notes.map(str) : [],
    source: str(data.source),
    delta: parseDelta(data.delta),
    deltaBasis: str(data.delta_basis),
  };
}

/**
 * The precision mix: output precision -> layer count, most first.
 * @param {EngineLayerRow[]} layers
 * @returns {[string, number][]}
 */
export function precisionMix(layers) {
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const l of layers) {
    const p = l.precision.split("\u2192").pop() || "unknown"; // no output precision recorded (as Python says)
    counts.set(p, (counts.get(p) || 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
}

/**
 * Layers whose name, type, precision, tactic or fused nodes contain `query` (case-insensitive), sorted.
 * @param {EngineLayerRow[]} layers
 * @param {string} query
 * @param {SortKey} key
 * @param {boolean} descending
 * @returns {EngineLayerRow[]}
 */
export function filterSort(layers, query, key, descending) {
  const q = query.trim().toLowerCase();
  const kept = q
    ? layers.filter(
        (l) =>
          l.name.toLowerCase().includes(q) ||
          l.type.toLowerCase().includes(q) ||
          l.precision.toLowerCase().includes(q) ||
          l.tactic.toLowerCase().includes(q) ||
          l.onnx_nodes.some((n) => n.toLowerCase().includes(q)),
      )
    : layers.slice();
  /** @param {EngineLayerRow} l */
  const value = (l) => (key === "index" ? l.index : key === "nodes" ? l.onnx_nodes.length : l[key]);
  kept.sort((a, b) => {
    const va = value(a);
    const vb = value(b);
    const c = typeof va === "number" && typeof vb === "number" ? va - vb : String(va).localeCompare(String(vb));
    return (descending ? -c : c) || a.index - b.index;
  });
  return kept;
}

export class EngineView {
  constructor() {
    this.el = h("div", "trtw-engine");
    this.chips = h("div", "trtw-engine-chips");
    this.deltaEl = h("div", "trtw-engine-delta");
    this.filter = h("input", "trtw-engine-filter", {
      type: "search",
      placeholder: "Filter layers (name, type, precision, tactic, ONNX node)",
      "aria-label": "Filter layers",
    });
    this.head = h("div", "trtw-engine-row trtw-engine-head", { role: "row" });
    /** @type {Map<SortKey, HTMLElement>} */
    this.headCells = new Map();
    for (const [key, label, title] of COLUMNS) {
      const cell = h("button", `trtw-engine-cell trtw-engine-${key}`, { type: "button", role: "columnheader" });
      cell.textContent = label;
      cell.title = `${title} (click to sort)`;
      cell.dataset.key = key;
      this.headCells.set(key, cell);
      this.head.append(cell);
    }
    this.scroller = h("div", "trtw-engine-scroll", { role: "table", tabindex: "0" });
    this.scroller.style.height = `${VIEW_ROWS * ROW_PX}px`;
    this.spacer = h("div", "trtw-engine-spacer");
    this.rowsEl = h("div", "trtw-engine-rows");
    this.scroller.append(this.spacer, this.rowsEl);
    this.detail = h("div", "trtw-engine-detail");
    this.countEl = h("div", "trtw-engine-count");
    this.notesEl = h("div", "trtw-engine-notes");
    this.el.append(
      this.chips,
      this.deltaEl,
      this.filter,
      this.countEl,
      this.head,
      this.scroller,
      this.detail,
      this.notesEl,
    );
    /** @type {ReturnType<typeof parseEngine>} */
    this.report = null;
    this.text = "";
    /** @type {EngineLayerRow[]} */
    this.shown = [];
    /** @type {SortKey} */
    this.sortKey = "index";
    this.descending = false;
    this.query = "";
    /** @type {number} the selected layer's index in the engine, -1 for none */
    this.selected = -1;
    this.first = -1; // the first row index rendered
    this.last = -1;
    this.el.addEventListener("click", (e) => this.onClick(/** @type {MouseEvent} */ (e)));
    this.filter.addEventListener("input", () => this.setQuery(this.filter.value));
    this.scroller.addEventListener("scroll", () => this.renderRows(false));
  }

  /** @returns {boolean} whether there is a report to show */
  hasReport() {
    return this.report !== null;
  }

  /**
   * Read `engine_json` (only when it changed).
   * @param {unknown} text
   */
  update(text) {
    const t = str(text);
    if (t === this.text) return;
    this.text = t;
    this.report = parseEngine(t);
    this.selected = -1;
    this.renderChips();
    this.refilter();
  }

  renderChips() {
    const r = this.report;
    this.chips.replaceChildren();
    this.notesEl.replaceChildren();
    const delta = r ? r.delta : null;
    this.deltaEl.hidden = !delta;
    setText(this.deltaEl, delta ? deltaText(delta) : "");
    this.deltaEl.title =
      delta && r
        ? `Compared with the ${cut(r.deltaBasis || "last build", 200)} of the same model, options and backend`
        : "";
    if (!r) return;
    const kept = r.total > r.layers.length ? `${r.layers.length} of ${r.total}` : `${r.layers.length}`;
    /** @type {[string, string][]} */
    const chips = [["layers", kept]];
    for (const [p, n] of precisionMix(r.layers)) chips.push([cut(p, 20), String(n)]);
    /** @type {[string, string][]} */
    const memory = [
      ["weights", "weights"],
      ["activations", "activations"],
      ["engine_size", "engine"],
    ];
    for (const [key, label] of memory) {
      const v = r.memory[key];
      if (typeof v === "number") chips.push([label, fmtBytes(v)]);
    }
    for (const [label, value] of chips) {
      const chip = h("span", "trtw-engine-chip");
      const b = h("b");
      b.textContent = value;
      chip.append(b, ` ${label}`);
      this.chips.append(chip);
    }
    for (const note of r.notes) {
      const p = h("div");
      p.textContent = cut(note, 400);
      this.notesEl.append(p);
    }
  }

  /** @param {string} query */
  setQuery(query) {
    this.query = query;
    this.refilter();
  }

  /** @param {SortKey} key */
  sortBy(key) {
    if (this.sortKey === key) this.descending = !this.descending;
    else {
      this.sortKey = key;
      this.descending = false;
    }
    this.refilter();
  }

  refilter() {
    const layers = this.report ? this.report.layers : [];
    this.shown = filterSort(layers, this.query, this.sortKey, this.descending);
    for (const [key, cell] of this.headCells) {
      cell.setAttribute("aria-sort", key === this.sortKey ? (this.descending ? "descending" : "ascending") : "none");
    }
    setText(
      this.countEl,
      this.report ? `${this.shown.length} of ${layers.length} layers${this.query ? " match" : ""}` : "",
    );
    this.spacer.style.height = `${this.shown.length * ROW_PX}px`;
    this.renderRows(true);
    this.renderDetail();
  }

  /**
   * Render the rows in view (and a few around them); nothing when the same rows are there already.
   * @param {boolean} force
   */
  renderRows(force) {
    const top = this.scroller.scrollTop || 0;
    const height = this.scroller.clientHeight || VIEW_ROWS * ROW_PX;
    const first = Math.max(0, Math.floor(top / ROW_PX) - OVERSCAN);
    const last = Math.min(this.shown.length, Math.ceil((top + height) / ROW_PX) + OVERSCAN);
    if (!force && first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    const rows = [];
    for (let i = first; i < last; i++) rows.push(this.rowEl(this.shown[i], i));
    this.rowsEl.style.transform = `translateY(${first * ROW_PX}px)`;
    this.rowsEl.replaceChildren(...rows);
  }

  /**
   * @param {EngineLayerRow} l
   * @param {number} position
   * @returns {HTMLElement}
   */
  rowEl(l, position) {
    const row = h("div", "trtw-engine-row", { role: "row" });
    row.dataset.index = String(l.index);
    row.dataset.position = String(position);
    if (l.index === this.selected) row.setAttribute("aria-selected", "true");
    const nodes = l.onnx_nodes.length ? String(l.onnx_nodes.length) : "";
    const values = [String(l.index), cut(l.name), l.type, l.precision, cut(l.tactic, 120), nodes];
    for (const [i, [key]] of COLUMNS.entries()) {
      const cell = h("span", `trtw-engine-cell trtw-engine-${key}`, { role: "cell" });
      cell.textContent = values[i];
      if (key === "name" || key === "tactic") cell.title = cut(key === "name" ? l.name : l.tactic, 2000);
      row.append(cell);
    }
    return row;
  }

  renderDetail() {
    this.detail.replaceChildren();
    const r = this.report;
    if (!r || this.selected < 0) return;
    const l = r.layers[this.selected];
    if (!l) return;
    const title = h("div", "trtw-engine-detail-title");
    title.textContent = `${cut(l.name)} \u2014 ${l.type}, ${l.precision}${l.format ? `, ${cut(l.format, 80)}` : ""}`;
    const tactic = h("div");
    tactic.textContent = l.tactic ? `tactic: ${cut(l.tactic, 400)}` : "";
    const list = h("ul", "trtw-engine-nodelist");
    for (const n of l.onnx_nodes.slice(0, 500)) {
      const li = h("li");
      li.textContent = cut(n);
      list.append(li);
    }
    const none = h("div");
    none.textContent = l.onnx_nodes.length
      ? `${l.onnx_nodes.length} fused ONNX node${l.onnx_nodes.length === 1 ? "" : "s"}:`
      : "No ONNX node named for this layer (a reformat, or TensorRT printed none).";
    this.detail.append(title, tactic, none, list);
  }

  /** @param {number} index a layer's index in the engine; the same one again closes it */
  toggle(index) {
    this.selected = this.selected === index ? -1 : index;
    this.renderRows(true);
    this.renderDetail();
  }

  /** @param {MouseEvent} e */
  onClick(e) {
    const target = /** @type {HTMLElement | null} */ (e.target instanceof Element ? e.target : null);
    if (!target) return;
    const head = /** @type {HTMLElement | null} */ (target.closest(".trtw-engine-head .trtw-engine-cell"));
    if (head?.dataset.key) {
      this.sortBy(/** @type {SortKey} */ (head.dataset.key));
      return;
    }
    const row = /** @type {HTMLElement | null} */ (target.closest(".trtw-engine-rows .trtw-engine-row"));
    if (row?.dataset.index) this.toggle(Number(row.dataset.index));
  }
}
