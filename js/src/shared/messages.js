// The messages the front end sends to Python (anywidget custom messages), and the one Python answers with; trt_widget/_messages.py declares the
// same ones as TypedDicts (tests/test_typed_seams.py compares the two).

/**
 * What the build view (TrtView) sends: Stop clicked; a missed row delta (send all rows).
 * @typedef {{type: "stop"} | {type: "sync"}} ViewMessage
 */

/**
 * What js/src/build sends to BuildWidget: the view's messages, and "view" once per rendered view.
 * @typedef {ViewMessage | {type: "view"}} BuildMessage
 */

/**
 * What js/src/matrix sends to MatrixWidget and WatchWidget: a row's Stop or its tree's sync (naming the row),
 * Stop all, a row's tree shown or hidden.
 * @typedef {{type: "stop", build: number} | {type: "sync", build: number} | {type: "stop_all"}
 *   | {type: "expand", build: number, open: boolean}} RowsMessage
 */

/**
 * What BuildWidget sends to its view: the outcome of a Stop the kernel read only after the build had ended.
 * @typedef {{type: "stop_outcome", text: string}} KernelMessage
 */

export {};
