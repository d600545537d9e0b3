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
 * `String(v)`, with "" for undefined and null.
 * @param {unknown} v
 * @returns {string}
 */
export function str(v) {
  return v === undefined || v === null ? "" : String(v);
}

/**
 * "850 ms", "12.3 s", "2m 05s", "1h 02m".
 * @param {number} seconds
 * @returns {string}
 */
export function fmtDuration(seconds) {
  const s = Number.isFinite(seconds) && seconds >= 0 ? seconds : 0;
  if (s < 0.9995) return `${Math.round(s * 1000)} ms`;
  if (s < 59.95) return `${s.toFixed(1)} s`;
  if (s < 3600) {
    const m = Math.floor(s / 60);
    const r = Math.floor(s - m * 60);
    return `${m}m ${String(r).padStart(2, "0")}s`;
  }
  const hh = Math.floor(s / 3600);
  const m = Math.floor((s - hh * 3600) / 60);
  return `${hh}h ${String(m).padStart(2, "0")}m`;
}

/**
 * Coarse duration for estimates: "12 s", "2m 05s".
 * @param {number} seconds
 * @returns {string}
 */
export function fmtApprox(seconds) {
  const s = Number.isFinite(seconds) && seconds >= 0 ? seconds : 0;
  if (s < 59.5) return `${Math.ceil(s)} s`;
  return fmtDuration(s);
}

/**
 * Signed delta with a real minus sign: "+1.2 s", "−0.4 s".
 * @param {number} d
 * @returns {string}
 */
export function fmtDelta(d) {
  const sign = d > 0.05 ? "+" : d < -0.05 ? "\u2212" : "\u00b1";
  const a = Math.abs(d);
  const body = a < 59.95 ? `${a.toFixed(1)} s` : fmtDuration(a);
  return sign + body;
}

/**
 * Binary units with one decimal: "2.4 MB".
 * @param {unknown} value
 * @returns {string}
 */
export function fmtBytes(value) {
  const n = num(value);
  if (n < 1024) return `${Math.max(0, Math.round(n))} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
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
 * Round up to a "nice" axis maximum (changes rarely as time grows).
 * @param {number} x
 * @returns {number}
 */
export function niceCeil(x) {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}
