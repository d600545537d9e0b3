// Value coercion and number formatting (pure: no DOM).

/**
 * `v` if it is a finite number, else `dflt`.
 * @param {unknown} v
 * @param {number} [dflt]
 * @returns {number}
 */
export function num(v, dflt = 0) {
  return typeof v === "number" && Number.isFinite(v) ? v : dflt;
}

/**
 * What is never shown raw (trt_widget/_format.py UNSAFE_CHARACTERS is the same list; a Python test compares them):
 * C0 and C1 controls and DEL, the line and paragraph separators, the bidirectional marks, embeddings, overrides
 * and isolates that reorder what a reader sees, invisible characters (U+200B, U+2060, U+FEFF, U+FFF9-FFFB, the
 * tags U+E0000-E007F), the characters Unicode says to draw as nothing (soft hyphen, grapheme joiner, invisible
 * operators, fillers; the joiners and variation selectors of emoji and scripts stay) and lone surrogates.
 */
export const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: a combining mark (U+034F) is matched alone, as invisible
  /[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff\u{e0000}-\u{e007f}\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2061-\u2065\u206a-\u206f\u3164\uffa0\ufff0-\ufff8\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0080}-\u{e00ff}\u{e01f0}-\u{e0fff}]/gu;

/**
 * `text` with every unsafe character (see UNSAFE) shown as an escape, as the terminal shows it: U+202E -> "\u202e".
 * @param {unknown} text
 * @returns {string}
 */
export function escapeControls(text) {
  return str(text).replace(UNSAFE, (c) => {
    const code = /** @type {number} */ (c.codePointAt(0));
    const hex = code.toString(16);
    if (code < 0x100) return `\\x${hex.padStart(2, "0")}`;
    return code < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
  });
}

/**
 * `escapeControls` for each line of `text`, keeping its line breaks (for multi-line text such as an error).
 * @param {unknown} text
 * @returns {string}
 */
export function escapeLines(text) {
  return str(text).split("\n").map(escapeControls).join("\n");
}

/**
 * `String(v)`, with "" for undefined and null.
 * @param {unknown} v
 * @returns {string}
 */
export function str(v) {
  return v === undefined || v === null ? "" : String(v);
}

/**
 * What joins a number to its unit in every formatted value ("850\u00a0ms"): a no-break space, so that a line
 * never wraps between them (the terminal's Python formatters keep a plain space: trt_widget/_format.py).
 */
export const NBSP = "\u00a0";

const NUMBER_UNIT = /(?<=\d) (?=(?:ms|s|min|B|KiB|MiB|GiB|TiB|%)(?![\p{L}\p{N}_]))|(?<=\d min) (?=\d)/gu;

/**
 * `text` (prose Python made: "ended 0.2 s after stop()") with each number joined to its unit by NBSP, as
 * trt_widget/_format.py keep_units does for its HTML: a line never wraps between them.
 * @param {string} text
 * @returns {string}
 */
export function keepUnits(text) {
  return text.replace(NUMBER_UNIT, NBSP);
}

/**
 * "850 ms", "12.3 s", "2m 05s", "1h 02m" (each space a no-break space, NBSP).
 * @param {number} seconds
 * @returns {string}
 */
export function fmtDuration(seconds) {
  const s = Number.isFinite(seconds) && seconds >= 0 ? seconds : 0;
  if (s < 0.9995) return `${Math.round(s * 1000)}${NBSP}ms`;
  if (s < 59.95) return `${s.toFixed(1)}${NBSP}s`;
  if (s < 3600) {
    const m = Math.floor(s / 60);
    const r = Math.floor(s - m * 60);
    return `${m}m${NBSP}${String(r).padStart(2, "0")}s`;
  }
  const hh = Math.floor(s / 3600);
  const m = Math.floor((s - hh * 3600) / 60);
  return `${hh}h${NBSP}${String(m).padStart(2, "0")}m`;
}

/**
 * Coarse duration for estimates: "12 s", "2m 05s" (no-break spaces).
 * @param {number} seconds
 * @returns {string}
 */
export function fmtApprox(seconds) {
  const s = Number.isFinite(seconds) && seconds >= 0 ? seconds : 0;
  if (s < 59.5) return `${Math.ceil(s)}${NBSP}s`;
  return fmtDuration(s);
}

/**
 * Signed delta in the units durations use, with a real minus sign: "+120 ms", "−1.2 s", "+2m 05s".
 * @param {number} d seconds
 * @returns {string}
 */
export function fmtDelta(d) {
  const sign = d > 0 ? "+" : d < 0 ? "\u2212" : "\u00b1";
  return sign + fmtDuration(Math.abs(d));
}

/**
 * Whether a phase's change against the last build is worth showing: at least 0.1 s and 5 % of its time.
 * @param {number} delta seconds slower (+) or faster (−)
 * @param {number} duration the phase's time now, seconds
 * @returns {boolean}
 */
export function meaningfulDelta(delta, duration) {
  const a = Math.abs(delta);
  return Number.isFinite(a) && a >= 0.1 && a >= 0.05 * Math.max(0, duration - delta);
}

/**
 * Percent done for display: rounded, but 100 % only when complete and 0 % only when nothing is done.
 * @param {number} done
 * @param {number} total
 * @returns {number}
 */
export function percent(done, total) {
  if (!(total > 0)) return 0;
  if (done >= total) return 100;
  if (done <= 0) return 0;
  return Math.min(99, Math.max(1, Math.round((100 * done) / total)));
}

/**
 * Binary (IEC) units with one decimal, as the terminal and the report: "512 B", "2.4 MiB" (a no-break space).
 * @param {unknown} value bytes
 * @returns {string}
 */
export function fmtBytes(value) {
  const n = num(value);
  if (n < 1024) return `${Math.max(0, Math.round(n))}${NBSP}B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1023.95 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)}${NBSP}${units[i]}`;
}

/**
 * How long ago TensorRT last reported, for a running build: "" while it reports often, else "quiet 12 s".
 * @param {number} quietS seconds since the last callback
 * @returns {string}
 */
export function fmtQuiet(quietS) {
  if (!(quietS >= 5)) return "";
  return `no callback for ${fmtApprox(Math.floor(quietS))}`;
}

/**
 * What TensorRT's autotuner is timing (the activity trait's `timing`, from VERBOSE lines), for the "Now" line:
 * "timing {ForeignNode[...]} (Myelin) for 8 min, 3 tactics timed"; "" when nothing is being timed.
 * @param {unknown} timing {layer, runner, since_s, tactics}
 * @param {number} now the build clock (s)
 * @returns {string}
 */
export function fmtTiming(timing, now) {
  if (!timing || typeof timing !== "object") return "";
  const t = /** @type {Record<string, unknown>} */ (timing);
  if (typeof t.layer !== "string" || typeof t.since_s !== "number") return "";
  const kind = typeof t.runner === "string" && t.runner ? ` (${t.runner})` : "";
  const n = typeof t.tactics === "number" ? t.tactics : 0;
  const tactics = n > 0 ? `, ${n} tactic${n === 1 ? "" : "s"} timed` : "";
  return `timing ${t.layer}${kind} for ${fmtApprox(Math.max(0, Math.floor(now - t.since_s)))}${tactics}`;
}

/**
 * An axis step of 1, 2, 2.5 or 5 × 10^k giving about `target` ticks over `span`.
 * @param {number} span
 * @param {number} target
 * @returns {number}
 */
export function niceStep(span, target) {
  const raw = span / Math.max(1, target);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/**
 * Round up to a "nice" axis maximum (changes rarely as time grows; at most ~20 % past x: 16.3 s -> 18 s).
 * @param {number} x
 * @returns {number}
 */
export function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 1.2, 1.4, 1.6, 1.8, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

/**
 * @param {unknown} v
 * @returns {Record<string, unknown> | null} v if it is a non-array object, else null
 */
export function plainObject(v) {
  return v && typeof v === "object" && !Array.isArray(v) ? /** @type {Record<string, unknown>} */ (v) : null;
}
