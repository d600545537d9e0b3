// The comparison part of the build matrix view (pure DOM building, no model): each build's time and engine size
// against a baseline the user picks, and its largest phase-time differences.  Strings from Python go through
// textContent only.

import { h, setBreakable } from "../shared/dom.js";
import { escapeControls, fmtBytes, fmtDelta, fmtDuration, NBSP, num, str } from "../shared/format.js";

/**
 * @typedef {{id: number, model: string, group: string, variant: string, status: string, build_s: number | null,
 *   elapsed_s: number | null, start_up_s: number, cold_builder: boolean, engine_size: number | null,
 *   phases: Record<string, number>, twins: number[], reason: string}} Compared
 *   build_s leaves out start_up_s, the builder process's start-up (a row's elapsed time includes it); null: the
 *   build never started (stopped while queued), so it has no time and no differences. elapsed_s: its whole time,
 *   as its row shows it (a failed or cancelled build's "after" says that one number). cold_builder: its builder
 *   process had built nothing yet or had given its memory back while idle: its phases hold one-time costs
 *   twins: the other builds of the same model with the same options (what they differ by is run-to-run variation)
 *   reason: why a failed build failed or a cancelled one was stopped (the first line), "" for the others
 */

/**
 * @param {unknown} value
 * @returns {Compared[]}
 */
export function readComparison(value) {
  if (!Array.isArray(value)) return [];
  /** @type {Compared[]} */
  const out = [];
  for (const b of value) {
    if (!b || typeof b !== "object" || typeof b.id !== "number") continue;
    /** @type {Record<string, number>} */
    const phases = {};
    if (b.phases && typeof b.phases === "object") for (const [k, v] of Object.entries(b.phases)) phases[k] = num(v);
    out.push({
      id: b.id,
      model: str(b.model),
      group: typeof b.group === "string" ? b.group : str(b.model), // one per model: baselines group by it
      variant: str(b.variant),
      status: str(b.status),
      build_s: typeof b.build_s === "number" ? num(b.build_s) : null,
      elapsed_s: typeof b.elapsed_s === "number" ? num(b.elapsed_s) : null,
      start_up_s: num(b.start_up_s),
      cold_builder: b.cold_builder === true,
      engine_size: typeof b.engine_size === "number" ? b.engine_size : null,
      phases,
      twins: Array.isArray(b.twins) ? b.twins.filter((/** @type {unknown} */ t) => typeof t === "number") : [],
      reason: str(b.reason),
    });
  }
  return out;
}

/**
 * The largest phase-time differences of `b` against `base`: [name, seconds (+ slower)], biggest first.
 * @param {Compared} b
 * @param {Compared} base
 * @param {number} [count]
 * @returns {[string, number][]}
 */
export function phaseDiffs(b, base, count = 3) {
  const names = new Set([...Object.keys(b.phases), ...Object.keys(base.phases)]);
  /** @type {[string, number][]} */
  const diffs = [];
  for (const n of names) {
    const d = (b.phases[n] || 0) - (base.phases[n] || 0);
    if (Math.abs(d) >= 0.0005) diffs.push([n, d]);
  }
  diffs.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]));
  return diffs.slice(0, count);
}

// statuses of builds that ended without an engine: their times compare with nothing
const UNFINISHED = ["failed", "cancelled"];
const REASON_MAX = 160; // characters of a reason the Comparison shows (the whole first line is its tooltip)

/**
 * A reason on one line: its first line, spaces collapsed, cut to `max` characters with an ellipsis.
 * @param {string} text
 * @param {number} [max]
 * @returns {string}
 */
export function oneLine(text, max = REASON_MAX) {
  const line = text.trim().split("\n")[0].replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}\u2026` : line;
}

/**
 * @param {Compared} b
 * @param {Compared | undefined} model the baseline of b's model (none: no build of that model succeeded)
 * @param {number} longest
 * @param {boolean} mixed some compared builds were their builder process's first and some were not
 * @returns {HTMLTableRowElement}
 */
function compareRow(b, model, longest, mixed) {
  const base = model ?? b;
  const same = model !== undefined && b.id === model.id;
  const tr = h("tr", same ? "trtw-mx-base" : "", { "data-build": String(b.id) });
  const time = h("td", "trtw-mono");
  const bar = h("div", "trtw-mx-timebar");
  bar.style.width = `${Math.round((100 * (b.build_s ?? 0)) / longest)}%`;
  const timeText = h("span");
  const ended = UNFINISHED.includes(b.status) && b.build_s !== null;
  if (ended) bar.style.width = "0%"; // a failed build is no faster build
  timeText.textContent =
    b.build_s === null
      ? "never started"
      : ended
        ? `${b.status} after ${fmtDuration(b.elapsed_s ?? b.build_s)}`
        : fmtDuration(b.build_s);
  time.append(timeText, bar);
  // one that never started, failed or was cancelled has nothing to compare
  const both =
    model !== undefined &&
    b.build_s !== null &&
    base.build_s !== null &&
    !UNFINISHED.includes(b.status) &&
    !UNFINISHED.includes(base.status);
  const dSize = b.engine_size !== null && base.engine_size !== null ? b.engine_size - base.engine_size : null;
  const sizeDelta = dSize === null || same || !both ? "" : `${dSize >= 0 ? "+" : "\u2212"}${fmtBytes(Math.abs(dSize))}`;
  // a failed or cancelled build says why, there: its list row has room for only a few words of it
  const why = UNFINISHED.includes(b.status) && b.reason ? oneLine(b.reason) : "";
  const diffs = same
    ? why
      ? `baseline; ${why}`
      : "baseline"
    : !both
      ? `not compared${why ? `: ${why}` : ""}` // no differences would read as a match
      : phaseDiffs(b, base)
          .map(([n, d]) => `${n} ${fmtDelta(d)}`)
          .join(", ");
  // identical variants: the first build of a new or idle builder process is slower for reasons no variant causes
  const cold = mixed && b.cold_builder && b.build_s !== null;
  const phases = cold ? `${FIRST_BUILD}${diffs ? `; ${diffs}` : ""}` : diffs;
  if (cold) {
    tr.classList.add("trtw-mx-first-build");
    tr.title = `${FIRST_BUILD} (${FIRST_WHY})`;
  }
  const cells = [
    b.model,
    b.variant,
    b.status,
    null,
    b.start_up_s > 0 ? fmtDuration(b.start_up_s) : "",
    same || !both || b.build_s === null || base.build_s === null ? "" : fmtDelta(b.build_s - base.build_s),
    b.engine_size ? fmtBytes(b.engine_size) : "",
    sizeDelta,
    phases,
  ];
  for (const [i, c] of cells.entries()) {
    if (c === null) {
      tr.append(time);
      continue;
    }
    const td = h("td", "");
    // model names and phase names are untrusted; a model or variant name wraps at its parts (setBreakable)
    if (i < 2) setBreakable(td, escapeControls(c));
    else td.textContent = escapeControls(c);
    if (i === cells.length - 1 && why) {
      td.classList.add("trtw-mx-reason");
      td.dataset.status = b.status;
      td.title = escapeControls(oneLine(b.reason, Number.POSITIVE_INFINITY));
    }
    tr.append(td);
  }
  return tr;
}

// what the comparison's times leave out, so that they differ from the rows' elapsed times for a reason it says
const EXCLUDED =
  "Build times leave out starting the builder process (start-up), which the rows' elapsed times include: it says nothing " +
  "of a variant";
// a build that was its builder process's first: its phases hold one-time costs a later build does not pay
const FIRST_BUILD = "first build in a new or idle builder process: may include one-time costs";
const FIRST_WHY =
  "its phases pay one-time costs (fresh memory, TensorRT's first use in that process) that a build right after it " +
  "in the same process does not, about 0.1-0.3 s for a " +
  "ResNet-50 on a CPU; a difference from a warm build says little about its variant";

/**
 * Fill `container` with the comparison of `builds` against the baseline `baselineId` (default: the first that
 * succeeded); a select changes it through `onBaseline`. Returns the baseline id used, null without builds.
 * @param {HTMLElement} container
 * @param {Compared[]} builds
 * @param {number | null} baselineId
 * @param {(id: number) => void} onBaseline
 * @returns {number | null}
 */
export function renderComparison(container, builds, baselineId, onBaseline) {
  container.replaceChildren();
  if (builds.length === 0) return null;
  const nothing = nothingToCompare(builds);
  if (nothing) {
    const note = h("div", "trtw-detail trtw-mx-compare-note");
    note.textContent = nothing; // no build's times to compare: no baseline, no table (issue 39, eighth trial)
    container.append(note);
    return null;
  }
  const started = builds.filter((b) => b.build_s !== null);
  const mixed = started.some((b) => b.cold_builder) && started.some((b) => !b.cold_builder);
  const bases = baselines(builds, baselineId, mixed);
  const base = builds.find((b) => b.id === baselineId) || [...bases.values()][0] || builds[0];
  const head = h("div", "trtw-mx-compare-head");
  const title = h("span", "trtw-mx-title");
  title.textContent = "Comparison";
  const label = h("label", "trtw-detail");
  label.textContent = "baseline ";
  const select = h("select", "trtw-mx-baseline");
  for (const b of builds) {
    const opt = h("option", "", { value: String(b.id) });
    opt.textContent = escapeControls(`${b.model} \u00b7 ${b.variant}`);
    opt.selected = b.id === base.id;
    select.append(opt);
  }
  select.addEventListener("change", () => onBaseline(Number(select.value)));
  label.append(select);
  head.append(title, label);
  const table = h("table", "trtw-mx-table trtw-mx-compare-table");
  const hr = h("tr");
  const heads = [
    "model",
    "variant",
    "status",
    "build time (no start-up)",
    "start-up",
    "\u0394 time",
    "engine",
    "\u0394 engine",
  ];
  for (const text of [...heads, "largest phase differences"]) {
    const th = h("th");
    th.textContent = text;
    if (text.startsWith("build time") || text === "start-up") th.title = EXCLUDED;
    hr.append(th);
  }
  table.append(hr);
  const longest = Math.max(...builds.map((b) => b.build_s ?? 0), 1e-9);
  for (const b of builds) table.append(compareRow(b, bases.get(b.group), longest, mixed));
  const note = h("div", "trtw-detail trtw-mx-compare-note");
  const firsts = builds.filter((b) => mixed && b.cold_builder && b.build_s !== null);
  const noise = twinSpread(builds, mixed);
  const cold = firsts.length ? ` Rows marked "${FIRST_BUILD}": ${FIRST_WHY}.` : "";
  const models = bases.size > 1 ? ` ${EACH_MODEL}` : "";
  note.textContent = `${EXCLUDED}.${models}${cold}${noise ? ` ${noise}` : ""}`;
  container.append(head, table, note);
  return base.id;
}

// two models' engines are no change of one another: each build is compared with a build of its own model
const EACH_MODEL =
  "Each build is compared with the baseline of its own model (the one picked for its model, else its model's " +
  "first build that succeeded): two models' engines are no change of one another.";

/**
 * Per model, the build its other builds are compared with: the one picked (for its own model), else the model's
 * first build that succeeded, on a warm builder process where some were cold. A model none of whose builds
 * succeeded has none. As trt_widget/matrix/_table.py ``baselines``.
 * @param {Compared[]} builds
 * @param {number | null} baselineId
 * @param {boolean} mixed
 * @returns {Map<string, Compared>}
 */
export function baselines(builds, baselineId, mixed) {
  /** @type {Map<string, Compared>} */
  const out = new Map();
  const picked = builds.find((b) => b.id === baselineId);
  if (picked) out.set(picked.group, picked);
  for (const model of new Set(builds.map((b) => b.group))) {
    if (out.has(model)) continue;
    const done = builds.filter((b) => b.group === model && b.status === "succeeded");
    const base = done.find((b) => !mixed || !b.cold_builder) || done[0];
    if (base) out.set(model, base);
  }
  return out;
}

/**
 * Why there is no comparison ("" where there is one): no build succeeded (failed, cancelled and never started
 * builds have no times to compare, and none is a baseline). As trt_widget/matrix/_table.py ``nothing_to_compare``.
 * @param {Compared[]} builds
 * @returns {string}
 */
export function nothingToCompare(builds) {
  if (builds.length < 2 || builds.some((b) => b.status === "succeeded")) return "";
  return "Nothing to compare: no build succeeded.";
}

/**
 * What identical builds (the same model and options, warm alike) differed by: the run-to-run variation of this
 * matrix, which a difference between variants must exceed to say anything. "" without two such builds.
 * @param {Compared[]} builds
 * @param {boolean} mixed some builds were their builder process's first and some not (those are left out)
 * @returns {string}
 */
export function twinSpread(builds, mixed) {
  const byId = new Map(builds.map((b) => [b.id, b]));
  /** @param {Compared} b */
  const timed = (b) => b.status === "succeeded" && b.build_s !== null && !(mixed && b.cold_builder);
  let widest = null;
  for (const b of builds) {
    if (!timed(b)) continue;
    /** @type {Compared[]} */
    const group = [b];
    for (const id of b.twins) {
      const twin = byId.get(id);
      if (twin !== undefined && timed(twin)) group.push(twin);
    }
    if (group.length < 2) continue;
    const times = group.map((g) => /** @type {number} */ (g.build_s));
    const spread = Math.max(...times) - Math.min(...times);
    if (widest === null || spread > widest.spread) widest = { group, spread, low: Math.min(...times) };
  }
  if (widest === null) return "";
  const names = widest.group.map((g) => escapeControls(g.variant)).join(", ");
  const share = widest.low > 0 ? ` (${Math.round((100 * widest.spread) / widest.low)}${NBSP}%)` : "";
  return (
    `Builds of the same model with the same options (${names}) differed by up to ` +
    `${fmtDuration(widest.spread)}${share}: run-to-run variation here, which a difference between variants ` +
    "must exceed to say anything about them."
  );
}
