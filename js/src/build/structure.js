// The display structure of the phase rows: a tree keyed by phase id in which runs of same-name siblings are
// folded into groups.  Pure data (no DOM), so it is testable on its own.

import { num, str } from "../shared/format.js";

/** Runs of at least this many consecutive same-name siblings are shown as one group row. */
export const GROUP_MIN = 5;

/** @typedef {"running" | "done" | "finished-early" | "cancelled" | "failed" | "interrupted"} RowStatus */

/** @type {ReadonlySet<string>} */
const ROW_STATUSES = new Set(["running", "done", "finished-early", "cancelled", "failed"]);

/**
 * One phase instance.
 * @typedef {object} PhaseNode
 * @property {"phase"} kind
 * @property {string} key String(id)
 * @property {string} name
 * @property {string | null} parentKey
 * @property {RowStatus} status
 * @property {boolean} running
 * @property {number} start start time on the build clock (s)
 * @property {number | null} end
 * @property {number} dur finished duration (running rows are computed live instead)
 * @property {number | null} stop finish time on the build clock, null while running
 * @property {number} step
 * @property {number} numSteps
 * @property {PhaseNode[] | null} children in start order
 * @property {Item[] | null} items the children with same-name runs folded into groups
 */

/**
 * A run of >= GROUP_MIN consecutive same-name siblings.
 * @typedef {object} GroupNode
 * @property {"group"} kind
 * @property {string} key "g:<parent key or root>:<first member's key>": stable while the run grows
 * @property {string} name
 * @property {PhaseNode[]} members
 * @property {PhaseNode[]} items the members (groups are never nested)
 * @property {number} count
 * @property {number} finished members finished
 * @property {number} running members running
 * @property {number} cancelled
 * @property {number} failed members the build failed in
 * @property {number} early members finished early
 * @property {number} sumFinished total duration of the finished members
 * @property {number} sumStartRunning sum of the running members' start times
 * @property {number} start
 * @property {number | null} stop
 * @property {RowStatus} status
 */

/** @typedef {PhaseNode | GroupNode} Item */

/**
 * @typedef {object} Structure
 * @property {Map<string, PhaseNode>} byKey
 * @property {Map<string, GroupNode>} groups
 * @property {PhaseNode[]} nodes
 * @property {Item[]} items the top level
 */

/**
 * Build the display structure from the phase rows: nodes keyed by String(id), children in start order, and
 * per-parent "items" where runs of >= GROUP_MIN consecutive same-name siblings are folded into one group.
 * Rows that are not objects or lack an id are skipped, and so are later rows with a repeated id.
 * @param {unknown} phases the parsed `phases_json` (anything else counts as no rows)
 * @param {unknown} snapElapsed the snapshot's elapsed_s (for finished rows lacking end_s)
 * @param {boolean} [ended] the kernel went away mid-build: rows still running are "interrupted" at snapElapsed
 * @returns {Structure}
 */
export function buildStructure(phases, snapElapsed, ended = false) {
  const rows = Array.isArray(phases) ? phases : [];
  /** @type {Map<string, PhaseNode>} */
  const byKey = new Map();
  /** @type {PhaseNode[]} */
  const nodes = [];
  for (const raw of rows) {
    if (!raw || typeof raw !== "object") continue;
    const r = /** @type {Record<string, unknown>} */ (raw);
    if (r.id === undefined || r.id === null) continue;
    const key = String(r.id);
    if (byKey.has(key)) continue;
    let status =
      typeof r.status === "string" && ROW_STATUSES.has(r.status) ? /** @type {RowStatus} */ (r.status) : "running";
    if (ended && status === "running") status = "interrupted"; // nothing will end it: it stopped with the kernel
    const start = num(r.start_s);
    const end = typeof r.end_s === "number" && Number.isFinite(r.end_s) ? r.end_s : null;
    const running = status === "running";
    const dur = running ? 0 : Math.max(0, (end !== null ? end : num(snapElapsed, start)) - start);
    /** @type {PhaseNode} */
    const node = {
      kind: "phase",
      key,
      name: str(r.name),
      parentKey: r.parent === undefined || r.parent === null ? null : String(r.parent),
      status,
      running,
      start,
      end,
      dur,
      stop: running ? null : start + dur,
      step: Math.max(0, Math.floor(num(r.step))),
      numSteps: Math.max(0, Math.floor(num(r.num_steps))),
      children: null,
      items: null,
    };
    byKey.set(key, node);
    nodes.push(node);
  }
  /** @type {PhaseNode[]} */
  const roots = [];
  for (const n of nodes) {
    const p = n.parentKey !== null && n.parentKey !== n.key ? byKey.get(n.parentKey) : undefined;
    if (!p) roots.push(n);
    else if (p.children) p.children.push(n);
    else p.children = [n];
  }
  /** @type {Map<string, GroupNode>} */
  const groups = new Map();
  /**
   * @param {string | null} parentKey
   * @param {PhaseNode[]} children
   * @returns {Item[]}
   */
  const makeItems = (parentKey, children) => {
    /** @type {Item[]} */
    const items = [];
    const n = children.length;
    let i = 0;
    while (i < n) {
      let j = i;
      const name = children[i].name;
      while (j + 1 < n && children[j + 1].name === name) j++;
      if (j - i + 1 >= GROUP_MIN) {
        const members = children.slice(i, j + 1);
        const g = makeGroup(`g:${parentKey === null ? "root" : parentKey}:${members[0].key}`, name, members);
        groups.set(g.key, g);
        items.push(g);
      } else {
        for (let k = i; k <= j; k++) items.push(children[k]);
      }
      i = j + 1;
    }
    return items;
  };
  for (const n of nodes) if (n.children) n.items = makeItems(n.key, n.children);
  return { byKey, groups, nodes, items: makeItems(null, roots) };
}

/**
 * @param {string} key
 * @param {string} name
 * @param {PhaseNode[]} members
 * @returns {GroupNode}
 */
function makeGroup(key, name, members) {
  let finished = 0;
  let running = 0;
  let cancelled = 0;
  let failed = 0;
  let early = 0;
  let sumFinished = 0;
  let sumStartRunning = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const m of members) {
    if (m.running) {
      running++;
      sumStartRunning += m.start;
    } else {
      finished++;
      sumFinished += m.dur;
      if (m.status === "cancelled" || m.status === "interrupted") cancelled++;
      else if (m.status === "failed") failed++;
      else if (m.status === "finished-early") early++;
      end = Math.max(end, m.start + m.dur);
    }
  }
  /** @type {RowStatus} */
  const status = running ? "running" : failed ? "failed" : cancelled ? "cancelled" : early ? "finished-early" : "done";
  return {
    kind: "group",
    key,
    name,
    members,
    items: members,
    count: members.length,
    finished,
    running,
    cancelled,
    failed,
    early,
    sumFinished,
    sumStartRunning,
    start: members[0].start,
    stop: running ? null : end,
    status,
  };
}

/**
 * Where the build is: the chain of running phase instances from the top (the newest running one at each level,
 * looking into groups), e.g. Building engine › … › Evaluating tactic times › Measuring tactic time.
 * @param {Structure} struct
 * @returns {PhaseNode[]}
 */
export function runningPath(struct) {
  /** @type {PhaseNode[]} */
  const path = [];
  let items = struct.items;
  for (let depth = 0; depth < 64; depth++) {
    /** @type {PhaseNode | null} */
    let next = null;
    for (const it of items) {
      const candidates = it.kind === "group" ? it.members : [it];
      for (const c of candidates) if (c.running && (!next || c.start >= next.start)) next = c;
    }
    if (!next) break;
    path.push(next);
    items = next.items || [];
  }
  return path;
}
