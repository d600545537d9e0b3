// DOM helpers.  Text from Python only ever goes through textContent / setAttribute (never parsed as HTML).

const SVGNS = "http://www.w3.org/2000/svg";

/**
 * A new HTML element with a class name and attributes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} [cls]
 * @param {Record<string, string>} [attrs]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, cls, attrs) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

/**
 * A new SVG element with attributes.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number>} [attrs]
 * @returns {SVGElementTagNameMap[K]}
 */
export function svg(tag, attrs) {
  const e = /** @type {SVGElementTagNameMap[K]} */ (document.createElementNS(SVGNS, tag));
  if (attrs) for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  return e;
}

/**
 * Set textContent only when it changed.
 * @param {Node} node
 * @param {string} text
 */
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/**
 * Set `text` (already escaped), with a line-break opportunity after each "_", "=", ",", "/", "·" and a "." before a
 * letter: "optimization_level=0" or "resnet50.onnx" then wraps at its parts in a narrow table instead of widening it.
 * @param {Element} node
 * @param {string} text
 */
export function setBreakable(node, text) {
  if (node.textContent === text) return;
  const parts = text.split(/(?<=[_=,/\u00b7])(?=.)|(?<=\.)(?=[A-Za-z])/);
  const nodes = [];
  for (const [i, part] of parts.entries()) {
    if (i > 0) nodes.push(document.createElement("wbr"));
    nodes.push(document.createTextNode(part));
  }
  node.replaceChildren(...nodes);
}

/**
 * Set an attribute only when it changed; null or undefined removes it.
 * @param {Element} node
 * @param {string} name
 * @param {string | null | undefined} value
 */
export function setAttr(node, name, value) {
  if (value === null || value === undefined) {
    if (node.hasAttribute(name)) node.removeAttribute(name);
  } else if (node.getAttribute(name) !== value) {
    node.setAttribute(name, value);
  }
}

/** @returns {number} milliseconds */
export function perfNow() {
  const p = globalThis.performance;
  return p && typeof p.now === "function" ? p.now() : Date.now();
}
