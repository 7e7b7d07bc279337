// @ts-check
/** Dead letters: the records of the worker's sink, replayed (one or selected) or purged through the API of `durable-worker dead-letters`. */
import { call, get, Problem } from './api.js';
import { badge, formatTime, h, prettyJson, replace } from './dom.js';

/** @typedef {import('./store.js').Store} Store */

const STATES = ['dead', 'replayed', 'resolved', 'purged', 'all'];

/** @param {HTMLElement} root @param {Store} store */
export function deadLettersPage(root, store) {
  /** @type {any[]} */
  let records = [];
  /** @type {string | undefined} */
  let next;
  const selected = new Set();
  const expanded = new Set();
  let busy = false;

  const state = h(
    'select',
    { id: 'dead-letter-state', onchange: () => void load() },
    ...STATES.map((s) => h('option', { value: s }, s === 'all' ? 'every state' : s)),
  );
  const replaySelected = h('button', { type: 'button', id: 'replay-selected', onclick: () => void replay([...selected]) }, 'Replay selected');
  const purgeSelected = h('button', { type: 'button', id: 'purge-selected', class: 'danger', onclick: () => void purge([...selected]) }, 'Purge selected');
  const more = h('button', { type: 'button', id: 'more', onclick: () => void load(next) }, 'More');
  const report = h('div', { class: 'report', id: 'dead-letter-report', 'aria-live': 'polite' });
  const body = h('tbody');
  const sink = h('span', { class: 'muted' });
  replace(
    root,
    h('section', { class: 'dead-letters' }, h('div', { class: 'toolbar' }, h('h2', {}, 'Dead letters'), state, replaySelected, purgeSelected, sink), report),
    h(
      'table',
      { class: 'dead-letters' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, ''),
          h('th', {}, 'record'),
          h('th', {}, 'handler'),
          h('th', {}, 'reason'),
          h('th', {}, 'attempt'),
          h('th', {}, 'error'),
          h('th', {}, 'dead-lettered'),
          h('th', {}, 'state'),
          h('th', {}, ''),
        ),
      ),
      body,
    ),
    more,
  );

  /** @param {string} [after] */
  async function load(after) {
    try {
      const query = new URLSearchParams({ state: /** @type {HTMLSelectElement} */ (state).value });
      if (after !== undefined) query.set('after', after);
      const page = await get(`/api/dead-letters?${query}`);
      records = after === undefined ? page.records : [...records, ...page.records];
      next = page.next;
      if (after === undefined) for (const id of [...selected]) if (!records.some((r) => r.id === id)) selected.delete(id);
      render();
    } catch (err) {
      replace(report, h('p', { class: 'error' }, err instanceof Problem ? err.message : String(err)));
    }
  }

  function render() {
    sink.textContent = store.hello === undefined ? '' : `sink ${store.hello.deadLetterSink}`;
    more.hidden = next === undefined;
    replaySelected.toggleAttribute('disabled', busy || selected.size === 0);
    purgeSelected.toggleAttribute('disabled', busy || selected.size === 0);
    replace(body, ...records.flatMap((r) => rowOf(r)));
    if (records.length === 0) body.append(h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No record in this state.')));
  }

  /** @param {any} r */
  function rowOf(r) {
    const box = h('input', {
      type: 'checkbox',
      checked: selected.has(r.id),
      disabled: r.state === 'purged',
      onchange: (/** @type {Event} */ e) => {
        const input = /** @type {HTMLInputElement} */ (e.target);
        if (input.checked) selected.add(r.id);
        else selected.delete(r.id);
        render();
      },
    });
    const row = h(
      'tr',
      { dataset: { id: r.id, state: r.state } },
      h('td', {}, box),
      h('td', { class: 'mono link', onclick: () => (expanded.has(r.id) ? expanded.delete(r.id) : expanded.add(r.id), render()) }, r.id),
      h('td', {}, r.handler),
      h('td', {}, r.reason),
      h('td', { class: 'num' }, r.attempt),
      h('td', { class: 'error' }, r.error?.message ?? ''),
      h('td', {}, formatTime(r.deadLetteredAt)),
      h('td', {}, badge(r.state)),
      h(
        'td',
        {},
        r.state === 'dead' ? h('button', { type: 'button', class: 'replay-one', disabled: busy, onclick: () => void replay([r.id]) }, 'Replay') : null,
      ),
    );
    if (!expanded.has(r.id)) return [row];
    return [
      row,
      h(
        'tr',
        { class: 'expanded' },
        h(
          'td',
          { colspan: 9 },
          h(
            'p',
            {},
            `event ${r.event.id} · ${r.event.type} · subject ${r.event.subject} · sequence ${r.event.sequence} · worker ${r.workerId} · lease ${r.leaseId} · replays tried ${r.replayAttempts}`,
          ),
          r.error?.stack ? h('pre', { class: 'stack' }, r.error.stack) : null,
          r.state === 'purged' ? h('p', { class: 'muted' }, 'purged: its data is gone') : h('pre', { class: 'data' }, prettyJson(JSON.stringify(r.event.data))),
        ),
      ),
    ];
  }

  /** @param {string[]} ids */
  async function replay(ids) {
    if (ids.length === 0) return;
    busy = true;
    render();
    replace(report, h('p', {}, `replaying ${ids.length} record(s) with the handlers as they are now…`));
    try {
      const result = await call('POST', '/api/dead-letters/replay', { ids });
      const counts = new Map();
      for (const r of result.results) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
      replace(
        report,
        h('p', { class: result.ok ? 'ok' : 'error' }, `${ids.length} record(s): ${[...counts].map(([k, n]) => `${n} ${k}`).join(', ') || 'nothing ran'}`),
        ...result.results.filter((/** @type {any} */ r) => r.error).map((/** @type {any} */ r) => h('p', { class: 'error' }, `${r.id}: ${r.error.message}`)),
      );
      selected.clear();
    } catch (err) {
      replace(report, h('p', { class: 'error' }, err instanceof Problem ? err.message : String(err)));
    } finally {
      busy = false;
      await load();
    }
  }

  /** @param {string[]} ids */
  async function purge(ids) {
    if (ids.length === 0 || !confirm(`Purge ${ids.length} record(s)? Their events' data is dropped for good.`)) return;
    try {
      const result = await call('POST', '/api/dead-letters/purge', { ids });
      replace(report, h('p', { class: 'ok' }, `${result.purged.length} record(s) purged`));
      selected.clear();
    } catch (err) {
      replace(report, h('p', { class: 'error' }, err instanceof Problem ? err.message : String(err)));
    }
    await load();
  }

  const off = store.on('dead-letters', () => void load());
  void load();
  return off;
}
