// @ts-check
/**
 * The few DOM helpers the pages share. Everything from the worker (event data, log lines, error
 * messages) goes in as text, never as markup.
 */

/**
 * An element: `h('td', { class: 'x', dataset: { id } }, 'text', child)`. Attributes starting with
 * `on` are listeners; `null`, `undefined` and `false` children are skipped.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...(Node | string | number | null | undefined | false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'dataset') Object.assign(el.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name in el && name !== 'list' && name !== 'form') /** @type {any} */ (el)[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
  return el;
}

/** @param {Element} el @param {...(Node | string | null | undefined | false)} children */
export function replace(el, ...children) {
  el.replaceChildren(.../** @type {Array<Node | string>} */ (children.filter((c) => c !== null && c !== undefined && c !== false)));
}

/** @param {number} ms */
export function formatDuration(ms) {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** @param {number | string} at epoch ms or ISO text */
export function formatTime(at) {
  const date = new Date(at);
  return date.toLocaleTimeString(undefined, { hour12: false }) + `.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** @param {string} json */
export function prettyJson(json) {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
}

/** A status or outcome as a coloured label. @param {string} value */
export function badge(value) {
  return h('span', { class: `badge badge-${value}`, dataset: { badge: value } }, value.replace(/_/g, ' '));
}
