// Whether the kernel behind a model is still there.  A restarted or shut-down kernel sends nothing more: the
// last snapshot would say "Running" forever, its clock counting on.  Three signals, whichever comes first:
// - "comm_live_update": the widget manager marks every model disconnected when the kernel restarts
//   (@jupyter-widgets/base; JupyterLab does it on "restarting");
// - "comm:close": the comm closed (the widget was closed, or the front end dropped it);
// - polling the manager's kernel (JupyterLab's managers have `kernel`, the session's kernel connection): none
//   any more, disposed or "dead" after one was seen means it shut down.
// Nothing here is part of anywidget's documented API, so every read is guarded: where a signal is missing
// the view simply keeps its old behaviour.

const POLL_MS = 1000;

/** @type {Record<string, string>} */
export const GONE_TEXT = {
  restarted: "the kernel restarted during this build",
  shutdown: "the kernel shut down during this build",
  closed: "the widget's connection to the kernel closed during this build",
  lost: "the connection to the kernel was lost during this build",
};

/**
 * @param {unknown} v
 * @param {string} key
 * @returns {unknown}
 */
function field(v, key) {
  if (!v || (typeof v !== "object" && typeof v !== "function")) return undefined;
  try {
    return /** @type {Record<string, unknown>} */ (v)[key];
  } catch {
    return undefined;
  }
}

/**
 * The manager's view of the kernel: "none" (the manager has a kernel slot, empty), a kernel status
 * ("idle", "busy", "restarting", "dead", ...), "disposed", or "" when the manager says nothing about kernels.
 * @param {unknown} model
 * @returns {string}
 */
export function kernelState(model) {
  const manager = field(model, "widget_manager");
  if (!manager || typeof manager !== "object" || !("kernel" in manager)) return "";
  const kernel = field(manager, "kernel");
  if (kernel === null || kernel === undefined) return "none";
  if (field(kernel, "isDisposed") === true) return "disposed";
  const status = field(kernel, "status");
  return typeof status === "string" ? status : "";
}

/**
 * Why the kernel is gone, from the manager's view of it at the moment a disconnect was signalled.
 * @param {string} state kernelState()
 * @returns {keyof typeof GONE_TEXT}
 */
function reasonFor(state) {
  if (state === "none" || state === "disposed" || state === "dead") return "shutdown";
  if (state === "restarting" || state === "autorestarting" || state === "starting") return "restarted";
  // JupyterLab marks models disconnected only when the kernel restarts
  return state ? "restarted" : "lost";
}

/**
 * Watch the model's kernel; call `onGone(reason)` once when it is gone.  `active()` says whether it matters
 * now (a live build): the poll only reads the kernel then.
 * @param {{on?: unknown, off?: unknown, widget_manager?: unknown}} model
 * @param {(reason: keyof typeof GONE_TEXT) => void} onGone
 * @param {() => boolean} active
 * @returns {() => void} stops watching
 */
export function watchKernel(model, onGone, active) {
  let done = false;
  let seen = false; // a kernel was there: its absence later means it went away
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  /** @param {keyof typeof GONE_TEXT} reason */
  const gone = (reason) => {
    if (done) return;
    done = true;
    stop();
    onGone(reason);
  };
  const onLive = () => gone(reasonFor(kernelState(model)));
  const onClose = () => gone("closed");
  const on = typeof model.on === "function" ? model.on : null;
  const off = typeof model.off === "function" ? model.off : null;
  if (on) {
    on.call(model, "comm_live_update", onLive);
    on.call(model, "comm:close", onClose);
  }
  const poll = () => {
    const state = kernelState(model);
    if (!state) return;
    if (state === "none" || state === "disposed" || state === "dead") {
      if (seen && active()) gone("shutdown");
    } else {
      seen = true;
    }
  };
  poll();
  if (kernelState(model)) timer = setInterval(poll, POLL_MS);
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    if (off) {
      off.call(model, "comm_live_update", onLive);
      off.call(model, "comm:close", onClose);
    }
  }
  return () => {
    done = true;
    stop();
  };
}
