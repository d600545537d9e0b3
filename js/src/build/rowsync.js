// The phase rows as Python syncs them: the whole list now and then (`phases_json` with the delta number it
// includes, `phases_seq`), and in between only the rows that changed (`phases_delta`: {seq, rows}). Pure: no
// DOM, no model.

/**
 * @param {string} text
 * @returns {unknown}
 */
function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class RowSync {
  constructor() {
    /** rows in the order Python sent them (start order) @type {any[]} */
    this.rows = [];
    /** row id -> position in rows @type {Map<unknown, number>} */
    this.pos = new Map();
    this.seq = 0; // the last delta the rows include
    /** @type {string | null} */
    this.fullText = null;
    /** @type {string | null} */
    this.deltaText = null;
  }

  /**
   * Take the whole list (if its text is new).
   * @param {unknown} text phases_json
   * @param {unknown} seq phases_seq
   * @returns {boolean} whether the rows changed
   */
  loadFull(text, seq) {
    if (typeof text !== "string" || text === this.fullText) return false;
    this.fullText = text;
    const rows = parse(text);
    this.rows = Array.isArray(rows) ? rows.slice() : [];
    this.pos = new Map(this.rows.map((r, i) => [r && typeof r === "object" ? r.id : undefined, i]));
    this.seq = typeof seq === "number" && Number.isFinite(seq) ? seq : 0;
    this.deltaText = null; // a delta seen before may be newer than this list: look at it again
    return true;
  }

  /**
   * Apply a delta (if its text is new).
   * @param {unknown} text phases_delta
   * @returns {"applied" | "old" | "gap" | "none"} "gap": deltas were missed, ask for the whole list
   */
  applyDelta(text) {
    if (typeof text !== "string" || !text || text === this.deltaText) return "none";
    this.deltaText = text;
    const d = /** @type {{seq?: unknown, rows?: unknown} | undefined} */ (parse(text));
    if (!d || typeof d !== "object" || typeof d.seq !== "number" || !Array.isArray(d.rows)) return "none";
    if (d.seq <= this.seq) return "old";
    if (d.seq !== this.seq + 1) return "gap";
    const rows = this.rows.slice(); // a new array: readers compare identity to see a change
    for (const row of d.rows) {
      const id = row && typeof row === "object" ? row.id : undefined;
      const at = this.pos.get(id);
      if (at === undefined) {
        this.pos.set(id, rows.length);
        rows.push(row);
      } else {
        rows[at] = row;
      }
    }
    this.rows = rows;
    this.seq = d.seq;
    return "applied";
  }
}
