// @ts-check
/** Events: the live list (newest first) and, beside it, the selected event with its data, runs, errors and logs. */
import { get, Problem } from './api.js';
import { badge, formatDuration, formatTime, h, prettyJson, replace } from './dom.js';

/** @typedef {import('./store.js').Store} Store */
/** @typedef {import('./store.js').EventSummary} EventSummary */

const STATUSES = ['all', 'pending', 'ok', 'failed', 'dead_lettered', 'replayed', 'duplicate', 'no-handler'];

/** @param {HTMLElement} root @param {Store} store @param {string | undefined} selectedId */
export function eventsPage(root, store, selectedId) {
  let selected = selectedId;
  const filter = h('input', { type: 'search', placeholder: 'filter: type, subject, id, handler', class: 'filter', oninput: () => renderList() });
  const status = h(
    'select',
    { class: 'filter', onchange: () => renderList() },
    ...STATUSES.map((s) => h('option', { value: s }, s === 'all' ? 'every status' : s)),
  );
  const count = h('span', { class: 'muted' });
  const body = h('tbody');
  const detail = h('section', { class: 'detail', id: 'event-detail' });
  replace(
    root,
    h(
      'div',
      { class: 'split' },
      h(
        'section',
        { class: 'list' },
        h('div', { class: 'toolbar' }, filter, status, count),
        h(
          'table',
          { class: 'events' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'seq'),
              h('th', {}, 'type'),
              h('th', {}, 'subject'),
              h('th', {}, 'attempt'),
              h('th', {}, 'status'),
              h('th', {}, 'handlers'),
            ),
          ),
          body,
        ),
      ),
      detail,
    ),
  );

  /** @param {EventSummary} e */
  const matches = (e) => {
    const wanted = /** @type {HTMLSelectElement} */ (status).value;
    if (wanted !== 'all' && e.status !== wanted) return false;
    const text = /** @type {HTMLInputElement} */ (filter).value.trim().toLowerCase();
    return text === '' || [e.type, e.subject, e.id, e.sequence, ...e.handlers.map((r) => r.handler)].some((v) => v.toLowerCase().includes(text));
  };

  function renderList() {
    const list = store.eventList();
    const shown = list.filter(matches);
    count.textContent = `${shown.length} of ${list.length} (the last ${store.hello?.maxEvents ?? '?'} are kept)`;
    replace(
      body,
      ...shown.map((e) =>
        h(
          'tr',
          {
            dataset: { id: e.id, status: e.status },
            class: e.id === selected ? 'selected' : '',
            title: `pulled ${formatTime(e.seenAt)} by ${e.delivery.workerId}`,
            onclick: () => (location.hash = `#/events/${encodeURIComponent(e.id)}`),
          },
          h('td', { class: 'num' }, e.sequence),
          h('td', {}, e.type),
          h('td', { class: 'subject' }, e.subject),
          h('td', { class: 'num', title: `generation ${e.delivery.generation}, lease ${e.delivery.leaseId}` }, String(e.delivery.attempt)),
          h('td', {}, badge(e.status)),
          h(
            'td',
            { class: 'handlers' },
            ...e.handlers.map((r) =>
              h('span', { class: 'run', dataset: { handler: r.handler, outcome: r.outcome } }, `${r.handler} `, badge(r.outcome), ` ${ranFor(r)}`),
            ),
          ),
        ),
      ),
    );
    if (list.length === 0) body.append(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No event yet: ingest one (Send), or run dev with --demo.')));
  }

  let loading = 0;
  async function renderDetail() {
    if (selected === undefined) {
      replace(detail, h('p', { class: 'muted' }, 'Select an event to see its data, handler runs, errors and logs.'));
      return;
    }
    const ticket = ++loading;
    try {
      const event = await get(`/api/events/${encodeURIComponent(selected)}`);
      if (ticket === loading) replace(detail, ...eventDetail(event));
    } catch (err) {
      if (ticket === loading) replace(detail, h('p', { class: 'error' }, err instanceof Problem ? err.message : String(err)));
    }
  }

  const onRoute = (/** @type {Event} */ e) => {
    e.preventDefault();
    selected = /** @type {CustomEvent} */ (e).detail;
    renderList();
    void renderDetail();
  };
  root.addEventListener('route', onRoute);
  const off = store.on('events', () => {
    renderList();
    if (selected !== undefined && store.changed.has(selected)) void renderDetail();
  });
  renderList();
  void renderDetail();
  return () => {
    off();
    root.removeEventListener('route', onRoute);
  };
}

/** @param {any} event */
function eventDetail(event) {
  const meta = [
    ['id', event.id],
    ['type', event.type],
    ['subject', event.subject],
    ['sequence', event.sequence],
    ['time', event.time ?? '—'],
    ['source', event.source ?? '—'],
  ];
  /** @type {any[]} */
  const runs = event.runs;
  /** @type {any[]} */
  const logs = event.logs;
  const runLogs = (/** @type {any} */ run) => logs.filter((l) => l.handler === run.handler && (l.attempt === undefined || l.attempt === run.attempt));
  const otherLogs = logs.filter((l) => l.handler === undefined || !runs.some((r) => r.handler === l.handler));
  return [
    h('h2', {}, `${event.type} `, badge(event.status)),
    h('dl', { class: 'meta' }, ...meta.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
    h('h3', {}, 'Handler runs'),
    runs.length === 0
      ? h('p', { class: 'muted' }, event.status === 'no-handler' ? 'No handler takes this event type.' : 'No handler has finished with it yet.')
      : h('div', { class: 'runs' }, ...runs.map((run) => runView(run, runLogs(run)))),
    otherLogs.length > 0 ? h('h3', {}, 'Other log lines') : null,
    otherLogs.length > 0 ? logList(otherLogs) : null,
    event.logsDropped > 0 ? h('p', { class: 'muted' }, `${event.logsDropped} earlier log line(s) not kept`) : null,
    h('h3', {}, 'Deliveries'),
    h(
      'table',
      { class: 'deliveries' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'attempt'),
          h('th', {}, 'generation'),
          h('th', {}, 'lease'),
          h('th', {}, 'workerId'),
          h('th', {}, 'pulled'),
          h('th', {}, 'ack'),
        ),
      ),
      h(
        'tbody',
        {},
        ...event.deliveryHistory.map((/** @type {any} */ d) =>
          h(
            'tr',
            { dataset: { attempt: d.attempt } },
            h('td', { class: 'num' }, d.attempt),
            h('td', { class: 'num' }, d.generation),
            h('td', { class: 'mono' }, d.leaseId),
            h('td', {}, d.workerId),
            h('td', {}, formatTime(d.pulledAt)),
            h('td', {}, d.ack === undefined ? '…' : `${d.ack.sent} → ${d.ack.status}`),
          ),
        ),
      ),
    ),
    h('h3', {}, 'Data'),
    event.dataTruncated ? h('p', { class: 'muted' }, `data is ${event.dataTruncated.bytes} bytes: the first 64 KB are shown`) : null,
    h('pre', { class: 'data' }, prettyJson(event.data)),
  ];
}

/** @param {any} run @param {any[]} logs */
function runView(run, logs) {
  return h(
    'article',
    { class: 'run-detail', dataset: { handler: run.handler, attempt: run.attempt, outcome: run.outcome } },
    h(
      'header',
      {},
      h('strong', {}, run.handler),
      ` attempt ${run.attempt} `,
      badge(run.outcome),
      ` ${ranFor(run)} `,
      h('span', { class: 'muted' }, formatTime(run.at)),
    ),
    run.error ? h('p', { class: 'error' }, run.error.code ? `${run.error.code}: ${run.error.message}` : run.error.message) : null,
    run.error?.stack ? h('pre', { class: 'stack' }, run.error.stack) : null,
    logs.length > 0 ? logList(logs) : h('p', { class: 'muted' }, 'no log line'),
  );
}

/** How long the handler ran; a duplicate did not run, a replay is not timed. @param {{ outcome: string, durationMs: number }} run */
function ranFor(run) {
  return run.outcome === 'duplicate' || run.outcome.startsWith('replay') ? '' : formatDuration(run.durationMs);
}

/** @param {any[]} logs */
function logList(logs) {
  return h(
    'pre',
    { class: 'logs' },
    ...logs.map((l) =>
      h(
        'div',
        { class: `log log-${l.level}` },
        `${formatTime(l.time)} ${l.level.padEnd(5)} ${l.msg}`,
        l.fields ? h('span', { class: 'fields' }, ` ${l.fields}`) : null,
      ),
    ),
  );
}
