// trt_widget front end: a live, collapsible tree (and timeline) of TensorRT engine-build phases with a
// Stop button.  Plain DOM, no framework; esbuild bundles these modules into trt_widget/static/widget.js.
//
// Contract: the Python side writes synced traits (status, status_detail, elapsed_s, started, the phase rows as
// phases_json / phases_seq / phases_delta, engine_size, error, logs, cancel, can_force, eta, history_delta,
// resources, activity: see `Traits` below); this module only reads them and sends {type: "stop"} when Stop is
// clicked, {type: "sync"} when it missed a row delta, {type: "view"} once per rendered view.  Every trait may be missing.
//
// Security: every string coming from Python (phase names, log messages, errors, ...) is written with
// textContent or setAttribute; nothing is ever parsed as HTML.
//
// Modules: format.js (formatters), dom.js (element helpers), structure.js (phase tree and grouping, no
// DOM), rows.js (a tree row), tree.js (the tree), timeline.js, header.js (header, notices, error box,
// sparkline, log panel), view.js (TrtView: traits, clock, wiring), messages.js (what it sends to Python).

import { TrtView } from "./view.js";

/**
 * The traits Python syncs (BuildWidget).  Any of them may be missing or malformed: the view checks every
 * value it reads.
 * @typedef {object} Traits
 * @property {string} status idle | queued | running | cancelling | succeeded | cancelled | failed
 * @property {string} status_detail
 * @property {number} elapsed_s the build clock at this snapshot
 * @property {boolean} started false while queued and for a build stopped there (it never built: no time shown)
 * @property {string} phases_json the phase rows as one JSON text: [{id, name, parent, depth, step,
 *   num_steps, start_s, end_s, duration_s, status}, ...]; sent first, at the end and when a view asks
 * @property {number} phases_seq the last delta phases_json includes
 * @property {string} phases_delta JSON text {seq, rows}: the rows new or changed since delta seq - 1
 * @property {number} engine_size bytes
 * @property {string} engine_json the engine report (EngineReport.to_dict() as JSON text) once the build
 *   succeeded, "" before
 * @property {string} error
 * @property {{severity: string, message: string, t: number}[]} logs
 * @property {{phase: string, requested_at_s: number} | null} cancel
 * @property {boolean} can_force
 * @property {{total_s: number, based_on: string, phases: Record<string, number>} | {none: string, why: string} | null} eta
 *   no total_s: there is no ETA, and `none` says why in a word (a first build), `why` in a sentence
 * @property {Record<string, number> | null} history_delta phase id -> seconds slower (+) or faster (−)
 * @property {{created: number, said: string} | null} history_basis the past build history_delta compares with:
 *   when it was made (epoch s) and "build of 2026-12-06 15:30, 1.4 s, same …"
 * @property {{samples: (number | null)[][], peak_rss: number | null, peak_gpu_mem: number | null,
 *   trt_peak: string | null, scope?: string, gpu_scope?: string | null} | null} resources samples are
 *   [t, rss, gpu_mem, gpu_util, cpu%]; gpu_scope says whose the GPU figure is
 * @property {{last_callback_s: number | null, timing?: {layer: string, runner: string, since_s: number, tactics: number} | null} | null} activity while live: build time of TensorRT's last callback; what the autotuner times
 */

/**
 * The part of the anywidget model the view uses; what it sends is typed (shared/messages.js).
 * @typedef {Pick<import("@anywidget/types").AnyModel<Traits>, "get" | "on" | "off">
 *   & {send(msg: import("../shared/messages.js").ViewMessage): void}} Model
 */

/** @satisfies {import("@anywidget/types").AnyWidget<Traits>} */
export default {
  render({ model, el }) {
    const view = new TrtView(model, el);
    // Python keeps the widget view in the final output only once a front end has shown one (else readers
    // without this JavaScript, such as nbconvert's HTML, get the static rendering)
    try {
      /** @type {import("../shared/messages.js").BuildMessage} */
      const rendered = { type: "view" };
      model.send(rendered);
    } catch {
      // a model without a live comm (a saved notebook, a static page): nothing to tell
    }
    return () => view.destroy();
  },
};
