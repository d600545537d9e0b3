// One row of the tree view (a phase instance or a group of same-name siblings).  Rows diff against a cache
// of what they last rendered, so an update only touches the DOM where something changed.

import { h, setAttr } from "../shared/dom.js";
import { escapeControls, fmtApprox, fmtDelta, fmtDuration, meaningfulDelta, percent } from "../shared/format.js";

/** @typedef {import("./structure.js").Item} Item */

/**
 * Where a row sits in the visible tree.
 * @typedef {object} RowData
 * @property {Item} item
 * @property {number} level 1 for top-level rows
 * @property {string | null} parentKey
 * @property {boolean} expandable
 * @property {boolean} expanded
 */

/**
 * What all rows of one update share.
 * @typedef {object} RowContext
 * @property {boolean} live the build is running (or cancelling)
 * @property {number} now the build clock (s)
 * @property {Record<string, unknown> | null} hd history_delta: phase key -> seconds slower (+) or faster (−)
 * @property {Record<string, unknown> | null} eta eta.phases: phase name -> expected seconds
 * @property {string} basis the past build the deltas compare with (history_basis.said or eta.based_on), "" if
 *   unknown
 * @property {number | null} [basedAt] when that past build was made (epoch s), null if unknown
 */

/**
 * A row's live time: `a + rate * now` seconds (rate = number of running members), `eta` expected seconds.
 * @typedef {{a: number, rate: number, eta: number | null}} LiveTime
 */

export class RowView {
  /** @param {string} key */
  constructor(key) {
    this.key = key;
    this.el = h("div", "trtw-row", { role: "treeitem", tabindex: "-1" });
    this.label = h("div", "trtw-label");
    this.twisty = h("span", "trtw-twisty", { "aria-hidden": "true" });
    this.name = h("span", "trtw-name");
    this.count = h("span", "trtw-count");
    this.mark = h("span", "trtw-mark");
    this.label.append(this.twisty, this.name, this.count, this.mark);
    this.note = h("span", "trtw-note trtw-mono");
    this.bar = h("div", "trtw-bar", { role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100" });
    this.fill = h("div", "trtw-fill");
    this.bar.append(this.fill);
    this.steps = h("span", "trtw-steps trtw-mono");
    this.pct = h("span", "trtw-pct trtw-mono");
    this.time = h("span", "trtw-time trtw-mono");
    this.el.append(this.label, this.note, this.bar, this.steps, this.pct, this.time);
    /** cached rendered state; only differences touch the DOM @type {Record<string, unknown>} */
    this.c = {};
    /** @type {string | null} */
    this.parentKey = null;
    this.expandable = false;
    this.expanded = false;
    /** set while the row's time is live @type {LiveTime | null} */
    this.live = null;
  }

  /**
   * @param {RowData} d
   * @param {RowContext} ctx
   */
  update(d, ctx) {
    // Plain field-by-field diffing against the cache `c` (no closures: this runs for every visible row on
    // every update).
    const it = d.item;
    const c = this.c;
    const el = this.el;
    const isGroup = it.kind === "group";
    this.parentKey = d.parentKey;
    this.expandable = d.expandable;
    this.expanded = d.expanded;
    if (c.level !== d.level) {
      c.level = d.level;
      el.setAttribute("aria-level", String(d.level));
      el.style.setProperty("--trtw-lvl", String(d.level - 1));
    }
    const exp = d.expandable ? (d.expanded ? "true" : "false") : null;
    if (c.exp !== exp) {
      c.exp = exp;
      setAttr(el, "aria-expanded", exp);
    }
    if (c.group !== isGroup) {
      c.group = isGroup;
      el.classList.toggle("trtw-group", isGroup);
    }
    if (c.status !== it.status) {
      c.status = it.status;
      el.dataset.status = it.status;
    }
    if (c.name !== it.name) {
      c.name = it.name;
      const shown = escapeControls(it.name); // a model's node names may hold bidi overrides: shown escaped
      this.name.textContent = shown;
      this.name.title = shown;
      this.bar.setAttribute("aria-label", `${shown} progress`);
    }
    const count = isGroup ? it.count : 0;
    if (c.count !== count) {
      c.count = count;
      this.count.textContent = isGroup ? `\u00d7${count}` : "";
    }

    // A phase TensorRT ended is done, even when it ended before its announced last step (the root of every
    // build does): drawn as done, the steps column keeps the true count and its tooltip says why.
    const early = !isGroup && it.status === "finished-early";
    /** @type {number | null} null = indeterminate */
    let pct;
    let done; // steps (or finished members) shown as done
    let total;
    if (isGroup) {
      // a group does not know how many members are still to come: no percentage, no bar, just what is done
      done = it.finished;
      total = it.count;
      pct = null;
    } else {
      total = it.numSteps;
      done = it.status === "done" ? total : Math.min(it.step, total);
      if (it.status === "done" || early) pct = 100;
      else if (total > 0) pct = percent(done, total);
      else pct = it.running ? null : 0;
    }
    if (c.pct !== pct) {
      c.pct = pct;
      this.fill.style.width = pct === null ? "0%" : `${pct}%`;
      setAttr(this.bar, "aria-valuenow", pct === null ? null : String(pct));
      this.pct.textContent = pct === null || early ? "" : `${pct}%`; // early: the steps column says "done"
    }
    if (c.barHidden !== isGroup) {
      c.barHidden = isGroup;
      this.bar.style.visibility = isGroup ? "hidden" : "";
    }
    if (c.done !== done || c.total !== total || c.vstatus !== it.status) {
      c.done = done;
      c.total = total;
      c.vstatus = it.status;
      let stepsText = total > 0 ? `${done}/${total}` : "";
      if (early) stepsText = "done"; // not "5/6 100%", which reads as a contradiction; the tooltip has the count
      if (isGroup) stepsText = it.running ? `${done} done` : "";
      this.steps.textContent = stepsText;
      setAttr(
        this.steps,
        "title",
        early
          ? `TensorRT ended this phase after ${done} of the ${total} steps it announced; this is normal, not an error`
          : null,
      );
      let valueText;
      if (isGroup) valueText = `${done} of the ${total} started so far finished`;
      else if (early) valueText = `done (${done}/${total} steps)`;
      else if (total > 0) valueText = `${stepsText} steps`;
      else valueText = it.status === "done" ? "done" : it.running ? "running" : "0 steps";
      this.bar.setAttribute("aria-valuetext", valueText);
    }
    let markText = "";
    if (!isGroup) markText = ["failed", "cancelled", "interrupted"].includes(it.status) ? it.status : "";
    else if (it.failed || it.cancelled) {
      const failed = it.failed ? `${it.failed} failed` : "";
      markText = it.cancelled ? `${failed}${failed ? ", " : ""}${it.cancelled} cancelled` : failed;
    }
    if (c.markText !== markText) {
      c.markText = markText;
      this.mark.textContent = markText;
      this.mark.hidden = !markText;
    }

    // time: live (running) or static (finished)
    if (isGroup) {
      this.live = it.running ? { a: it.sumFinished - it.sumStartRunning, rate: it.running, eta: null } : null;
    } else {
      const expected = ctx.live && it.running && ctx.eta ? ctx.eta[it.name] : undefined;
      this.live = it.running ? { a: -it.start, rate: 1, eta: typeof expected === "number" ? expected : null } : null;
    }
    if (this.live) {
      this.tick(ctx.now);
      if (!ctx.live) this.live = null; // build over: freeze the last value
      return;
    }
    const duration = isGroup ? it.sumFinished : it.dur;
    this.setTime(fmtDuration(duration));
    const timeTip = isGroup
      ? `${it.count} instances: ${fmtDuration(duration)} in total, ${fmtDuration(duration / Math.max(1, it.finished))} on average`
      : null;
    if (c.timeTip !== timeTip) {
      c.timeTip = timeTip;
      setAttr(this.time, "title", timeTip);
    }
    let note = "";
    let noteKind = "";
    /** @type {string | null} */
    let noteTip = null;
    // a phase the build did not finish (cancelled, failed) is short because it was cut: no Δ, which reads as a speed-up
    const hd = it.status === "done" || it.status === "finished-early" ? ctx.hd : null;
    if (hd) {
      /** @type {number | null} */
      let delta = null;
      if (isGroup) {
        for (const m of it.members) {
          const v = hd[m.key];
          if (typeof v === "number" && Number.isFinite(v)) delta = (delta || 0) + v;
        }
      } else {
        const v = hd[it.key];
        if (typeof v === "number" && Number.isFinite(v)) delta = v;
      }
      if (delta !== null && meaningfulDelta(delta, duration)) {
        note = fmtDelta(delta);
        noteKind = delta > 0 ? "slower" : "faster";
        const basis = ctx.basis ? ` than ${ctx.basis}` : " than the last matching build";
        noteTip = `${fmtDuration(Math.abs(delta))} ${delta > 0 ? "slower" : "faster"}${basis}`;
      }
    }
    this.setNote(note, noteKind, noteTip);
  }

  /** @param {string} text */
  setTime(text) {
    if (this.c.time !== text) {
      this.c.time = text;
      this.time.textContent = text;
    }
  }

  /**
   * @param {string} text
   * @param {string} kind "slower", "faster", "eta" or ""
   * @param {string | null} [tip] the note's tooltip
   */
  setNote(text, kind, tip = null) {
    if (this.c.note !== text) {
      this.c.note = text;
      this.note.textContent = text;
    }
    if (this.c.noteTip !== tip) {
      this.c.noteTip = tip;
      setAttr(this.note, "title", tip);
    }
    if (this.c.noteKind !== kind) {
      this.c.noteKind = kind;
      this.note.dataset.kind = kind;
    }
  }

  /**
   * Refresh live text (running rows only).
   * @param {number} now the build clock (s)
   */
  tick(now) {
    const L = this.live;
    if (!L) return;
    const v = Math.max(0, L.a + L.rate * now);
    this.setTime(fmtDuration(v));
    if (L.eta !== null) {
      const left = L.eta - v;
      this.setNote(left >= 0.5 ? `~${fmtApprox(left)} left` : "", "eta");
    } else {
      this.setNote("", "");
    }
  }

  /** @param {boolean} on */
  setTabStop(on) {
    this.el.tabIndex = on ? 0 : -1;
  }
}
