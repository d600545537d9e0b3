// The timeline view: one SVG bar per phase instance (a group as one bar), one lane per tree level, on an
// axis that grows with the build clock.

import { h, svg } from "../shared/dom.js";
import { escapeControls, fmtDuration, niceCeil, niceStep, str } from "../shared/format.js";

/** @typedef {import("./structure.js").Item} Item */
/** @typedef {import("./structure.js").Structure} Structure */

const LANE_H = 18; // lane height (px)
const AXIS_H = 16; // axis height (px)
const NUMBER_PX = 12; // a bar too short for its name but this wide carries a number the legend explains
const LEGEND_KEYS = 12; // numbered bars listed by name in the legend (the rest are counted)

/** The bar colours the legend explains, in its order; finished-early is drawn as done. */
const STATUS_WORDS = /** @type {const} */ ([
  ["running", "running"],
  ["done", "done"],
  ["cancelled", "cancelled"],
  ["failed", "failed"],
  ["interrupted", "interrupted (the kernel went away)"],
]);

/**
 * The SVG of one bar and a cache of what it last rendered.
 * @typedef {object} Bar
 * @property {SVGSVGElement} g
 * @property {SVGRectElement} rect
 * @property {SVGTitleElement} title
 * @property {SVGTextElement} text
 * @property {Record<string, string | boolean>} c what was last rendered (only differences touch the DOM)
 * @property {Item} it
 */

export class TimelineView {
  constructor() {
    this.el = h("div", "trtw-timeline");
    this.svg = svg("svg", { class: "trtw-tl-svg", width: "100%", role: "img" });
    this.axis = svg("g", { class: "trtw-tl-axis" });
    this.barsG = svg("g", { class: "trtw-tl-bars" });
    this.nowLine = svg("line", { class: "trtw-tl-now", y1: 0, y2: 0 });
    this.svg.append(this.axis, this.barsG, this.nowLine);
    // the legend: what the colours and lanes mean, and the names of bars too short to carry them
    this.legend = h("div", "trtw-tl-legend");
    this.legendKinds = h("div", "trtw-tl-legend-kinds");
    this.legendKeys = h("ol", "trtw-tl-legend-keys");
    this.legend.append(this.legendKinds, this.legendKeys);
    this.el.append(this.svg, this.legend);
    this.legendText = "";
    /** @type {Map<string, Bar>} */
    this.bars = new Map();
    this.axisMax = 0;
    this.height = 0;
    this.maxEnd = 0;
    /** the items drawn, in drawing order @type {{it: Item, level: number}[] | null} */
    this.entries = null;
  }

  /**
   * Full update from a structure (ignores collapse state).
   * @param {Structure} struct
   * @param {number} now the build clock (s)
   * @param {boolean} live
   */
  update(struct, now, live) {
    /** @type {{it: Item, level: number}[]} */
    const list = [];
    let maxLevel = 0;
    let maxEnd = 0;
    /**
     * @param {Item[]} items
     * @param {number} level
     */
    const visit = (items, level) => {
      for (const it of items) {
        list.push({ it, level });
        if (level > maxLevel) maxLevel = level;
        if (it.stop !== null && it.stop > maxEnd) maxEnd = it.stop;
        if (it.kind === "group") {
          for (const m of it.members) if (m.items) visit(m.items, level + 1);
        } else if (it.items) {
          visit(it.items, level + 1);
        }
      }
    };
    visit(struct.items, 0);
    this.maxEnd = maxEnd;
    this.entries = list;
    const height = AXIS_H + (list.length ? maxLevel + 1 : 1) * LANE_H + 2;
    if (height !== this.height) {
      this.height = height;
      this.svg.setAttribute("height", String(height));
      this.nowLine.setAttribute("y2", String(height));
      this.axisMax = 0; // force axis rebuild
    }
    this.svg.setAttribute("aria-label", `Timeline of ${list.length} build phases`);
    const seen = new Set();
    for (const { it, level } of list) {
      seen.add(it.key);
      let b = this.bars.get(it.key);
      if (!b) {
        const g = svg("svg", { class: "trtw-tl-bar", height: LANE_H - 2 });
        const rect = svg("rect", { width: "100%", height: "100%", rx: 2 });
        const title = svg("title");
        rect.append(title);
        const text = svg("text", { x: 3, y: LANE_H - 6 });
        g.append(rect, text);
        b = { g, rect, title, text, c: {}, it };
        this.bars.set(it.key, b);
        this.barsG.append(g);
      }
      b.it = it;
      const c = b.c;
      const y = String(AXIS_H + level * LANE_H + 1);
      if (c.y !== y) {
        c.y = y;
        b.g.setAttribute("y", y);
      }
      if (c.status !== it.status) {
        c.status = it.status;
        b.g.setAttribute("data-status", it.status);
      }
      const name = escapeControls(it.name);
      const label = it.kind === "group" ? `${name} \u00d7${it.count}` : name;
      c.label = label; // relabel() decides what the bar shows
    }
    for (const [key, b] of this.bars) {
      if (!seen.has(key)) {
        b.g.remove();
        this.bars.delete(key);
      }
    }
    this.layout(now, live, true);
  }

  /**
   * Position bars; cheap enough to run on every tick while live.
   * @param {number} now the build clock (s)
   * @param {boolean} live show the "now" line
   * @param {boolean} all re-lay finished bars too (otherwise only running ones, unless the axis changed)
   */
  layout(now, live, all) {
    const span = Math.max(now, this.maxEnd, 0.001);
    const axisMax = niceCeil(span * 1.02);
    const rebuildAll = all || axisMax !== this.axisMax;
    if (axisMax !== this.axisMax) {
      this.axisMax = axisMax;
      this.drawAxis();
    }
    if (!this.entries) return;
    let relabel = rebuildAll;
    const width = this.svg.clientWidth || 900;
    for (const { it } of this.entries) {
      if (!rebuildAll && it.stop !== null) continue;
      const b = this.bars.get(it.key);
      if (!b) continue;
      const c = b.c;
      const end = it.stop !== null ? it.stop : Math.max(it.start, now);
      const x = (100 * it.start) / axisMax;
      const w = Math.max(0.15, (100 * (end - it.start)) / axisMax);
      const xs = `${x.toFixed(3)}%`;
      const ws = `${w.toFixed(3)}%`;
      if (c.x !== xs) {
        c.x = xs;
        b.g.setAttribute("x", xs);
      }
      if (c.w !== ws) {
        c.w = ws;
        b.g.setAttribute("width", ws);
      }
      // a label that does not fit its bar is not cut mid-letter: the bar carries a number the legend names
      const px = (width * w) / 100;
      const fits = px >= 7 * str(c.label).length + 8 ? "name" : px >= NUMBER_PX ? "number" : "none";
      if (c.fits !== fits) {
        c.fits = fits;
        relabel = true;
      }
      const title = barTitle(it, end - it.start, now);
      if (c.title !== title) {
        c.title = title;
        b.title.textContent = title;
      }
    }
    if (relabel) this.relabel();
    if (live) {
      const nx = `${((100 * now) / axisMax).toFixed(3)}%`;
      this.nowLine.setAttribute("x1", nx);
      this.nowLine.setAttribute("x2", nx);
      this.nowLine.style.display = "";
    } else {
      this.nowLine.style.display = "none";
    }
  }

  /** Each bar's text (its name, a number, or none) and the legend that explains colours and numbers. */
  relabel() {
    if (!this.entries) return;
    /** @type {string[]} */
    const keys = [];
    /** @type {string[]} */
    const unnamed = [];
    let more = 0;
    const statuses = new Set();
    for (const { it } of this.entries) {
      const b = this.bars.get(it.key);
      if (!b) continue;
      const c = b.c;
      statuses.add(it.status === "finished-early" ? "done" : it.status);
      let text = "";
      const said = () => `${str(c.label)} (${fmtDuration(it.stop !== null ? it.stop - it.start : 0)})`;
      if (c.fits === "name") text = str(c.label);
      else if (keys.length + unnamed.length >= LEGEND_KEYS) more++;
      else if (c.fits === "number") {
        keys.push(said());
        text = String(keys.length);
      } else unnamed.push(said());
      if (c.text !== text) {
        c.text = text;
        b.text.textContent = text;
        b.text.style.display = text ? "" : "none";
      }
    }
    const kinds = STATUS_WORDS.filter(([s]) => statuses.has(s));
    const text = JSON.stringify([kinds, keys, unnamed, more]);
    if (text === this.legendText) return;
    this.legendText = text;
    const parts = kinds.map(([s, word]) => {
      const item = h("span", "trtw-tl-legend-item");
      const swatch = h("span", "trtw-tl-swatch");
      swatch.dataset.status = s;
      item.append(swatch, word);
      return item;
    });
    const lanes = h("span", "trtw-tl-legend-note");
    lanes.textContent = "Top lane: the whole build; each lane below: the phases inside the bar above.";
    const short = h("span", "trtw-tl-legend-note");
    const tail = more ? `${unnamed.length ? "; " : ""}${more} more: hover a bar for its name and time` : "";
    short.textContent = unnamed.length || more ? `Too short to label: ${unnamed.join(", ")}${tail}.` : "";
    short.hidden = !(unnamed.length || more);
    this.legendKinds.replaceChildren(...parts, lanes, short);
    this.legendKeys.replaceChildren(
      ...keys.map((k, i) => {
        const li = h("li", "trtw-tl-legend-key");
        li.textContent = `${i + 1} ${k}`;
        return li;
      }),
    );
    this.legendKeys.hidden = keys.length === 0;
  }

  drawAxis() {
    const max = this.axisMax;
    const step = niceStep(max, 6);
    const kids = [];
    for (let t = 0; t <= max + 1e-9; t += step) {
      const x = `${((100 * t) / max).toFixed(3)}%`;
      kids.push(svg("line", { x1: x, x2: x, y1: AXIS_H - 3, y2: this.height }));
      const anchor = t === 0 ? "start" : t + step > max + 1e-9 ? "end" : "middle";
      const label = svg("text", { x, y: AXIS_H - 5, "text-anchor": anchor });
      label.textContent = step < 1 ? `${+t.toFixed(2)}s` : t >= 60 ? fmtDuration(t) : `${+t.toFixed(1)}s`;
      kids.push(label);
    }
    this.axis.replaceChildren(...kids);
  }
}

/**
 * A bar's tooltip.
 * @param {Item} it
 * @param {number} dur the bar's length (s)
 * @param {number} now the build clock (s)
 * @returns {string}
 */
function barTitle(it, dur, now) {
  if (it.kind === "group") {
    const total = it.sumFinished + (it.running ? it.running * now - it.sumStartRunning : 0);
    return (
      `${escapeControls(it.name)} \u00d7${it.count}\n` +
      `span ${fmtDuration(dur)}, total ${fmtDuration(total)}\n` +
      `${it.finished}/${it.count} finished` +
      (it.failed ? `, ${it.failed} failed` : "") +
      (it.cancelled ? `, ${it.cancelled} cancelled` : "")
    );
  }
  // ended before its announced last step but done: "5 steps", not "5/6", which reads as unfinished
  const early = it.status === "finished-early";
  const steps =
    it.numSteps > 0
      ? early
        ? `\n${it.step} step${it.step === 1 ? "" : "s"}`
        : `\nsteps ${it.status === "done" ? it.numSteps : Math.min(it.step, it.numSteps)}/${it.numSteps}`
      : "";
  // a phase TensorRT ended before its announced last step reads "done", as in the tree and the report
  const status = early ? "done" : it.status;
  return `${escapeControls(it.name)}\n${fmtDuration(it.running ? dur : it.dur)}${steps}\n${status}`;
}
