// @ts-check
/** Send: a typed ingest of one entry into a source, so that a handler can be triggered by hand. */
import { call, Problem } from './api.js';
import { h, replace } from './dom.js';
import { fieldErrors } from './field-errors.js';

/** @typedef {import('./store.js').Store} Store */

/** How the value box is read into the JSON value the spec takes. */
const KINDS = {
  text: (/** @type {string} */ v) => v,
  number: (/** @type {string} */ v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new Error('not a number');
    return n;
  },
  boolean: (/** @type {string} */ v) => {
    if (v !== 'true' && v !== 'false') throw new Error('true or false');
    return v === 'true';
  },
  'list (JSON)': (/** @type {string} */ v) => JSON.parse(v),
  null: () => null,
};

/** @param {HTMLElement} root @param {Store} store */
export function sendPage(root, store) {
  const sourceId = h('input', { name: 'sourceId', value: 'demo-products' });
  const entryId = h('input', { name: 'entryId', placeholder: 'e.g. product-42' });
  const rows = h('div', { class: 'property-rows', dataset: { field: 'entries[0].properties' } });
  const result = h('div', { class: 'send-result', id: 'send-result' });
  const form = h(
    'form',
    // The emulator's own validation answers (shown by field), not the browser's.
    { class: 'send', id: 'send-form', novalidate: true, onsubmit: (/** @type {Event} */ e) => (e.preventDefault(), void submit()) },
    h('label', { dataset: { field: 'sourceId' } }, 'source ID ', sourceId),
    h('label', { dataset: { field: 'entries[0].id' } }, 'entry ID ', entryId),
    h('h3', {}, 'Properties'),
    rows,
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'button', id: 'add-property', onclick: () => addRow() }, 'Add property'),
      h('button', { type: 'submit', id: 'send-button' }, 'Send'),
    ),
    result,
  );
  const errors = fieldErrors(form);
  replace(
    root,
    h(
      'section',
      {},
      h('h2', {}, 'Send an entry (typed ingest)'),
      h('p', { class: 'muted' }, 'Each accepted entry becomes a source_entry.updated event: watch it arrive in Events.'),
      form,
    ),
  );
  addRow('name', 'text', 'Kettle');
  addRow('price', 'number', '24.5');

  /** @param {string} [id] @param {string} [kind] @param {string} [value] */
  function addRow(id = '', kind = 'text', value = '') {
    const index = rows.children.length;
    const path = `entries[0].properties[${index}]`;
    const select = h('select', { name: 'kind' }, ...Object.keys(KINDS).map((k) => h('option', { value: k, selected: k === kind }, k)));
    const row = h(
      'div',
      { class: 'property-row', dataset: { field: path, row: String(index) } },
      h('label', { dataset: { field: `${path}.id` } }, 'id ', h('input', { name: 'id', value: id })),
      h('label', {}, 'type ', select),
      h('label', { dataset: { field: `${path}.value` } }, 'value ', h('input', { name: 'value', value })),
      h('label', { dataset: { field: `${path}.language` } }, 'language ', h('input', { name: 'language', placeholder: 'optional', size: 6 })),
      h('button', { type: 'button', class: 'remove', onclick: () => (row.remove(), renumber()) }, '×'),
    );
    rows.append(row);
  }

  /** Paths follow the rows' order, as the request's do. */
  function renumber() {
    [...rows.children].forEach((row, index) => {
      const path = `entries[0].properties[${index}]`;
      const el = /** @type {HTMLElement} */ (row);
      el.dataset.field = path;
      el.dataset.row = String(index);
      for (const label of el.querySelectorAll('label[data-field]')) {
        const input = /** @type {HTMLInputElement | null} */ (label.querySelector('input'));
        if (input !== null) /** @type {HTMLElement} */ (label).dataset.field = `${path}.${input.name}`;
      }
    });
  }

  async function submit() {
    errors.clear();
    replace(result);
    /** @type {Record<string, string[]>} */
    const local = {};
    const properties = [...rows.children].map((row, index) => {
      const read = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (row.querySelector(`[name="${name}"]`)).value;
      const kind = /** @type {keyof typeof KINDS} */ (read('kind'));
      /** @type {Record<string, unknown>} */
      const property = { id: read('id') };
      try {
        property.value = KINDS[kind](read('value'));
      } catch (err) {
        local[`entries[0].properties[${index}].value`] = [`${kind}: ${err instanceof Error ? err.message : String(err)}`];
      }
      if (read('language').trim() !== '') property.language = read('language').trim();
      return property;
    });
    if (Object.keys(local).length > 0) return errors.show({ message: 'Fix the values first (nothing was sent).', errors: local });
    const entry = { id: /** @type {HTMLInputElement} */ (entryId).value, properties };
    try {
      const accepted = await call('POST', '/api/send', { sourceId: /** @type {HTMLInputElement} */ (sourceId).value, entries: [entry] });
      replace(
        result,
        h(
          'p',
          { class: 'ok' },
          `Accepted ${accepted.acceptedEntryCount} entry into ${accepted.sourceId} (correlation ${accepted.correlationId}). `,
          h('a', { href: '#/events' }, `Watch for subject ${entry.id} in Events`),
        ),
      );
    } catch (err) {
      if (err instanceof Problem) errors.show(err);
      else replace(result, h('p', { class: 'error' }, String(err)));
    }
  }

  return () => {};
}
