// @ts-check
/** Deferred runs: the runs waiting in the worker's idempotency store (a retry time, an open breaker, an earlier run of their chain). */
import { get, Problem } from './api.js';
import { badge, formatTime, h, replace } from './dom.js';

/** @typedef {import('./store.js').Store} Store */

const REFRESH_MS = 2_000;

/** @param {number} ms */
function seconds(ms) {
  return `${(Math.round(ms / 100) / 10).toFixed(1)} s`;
}

/** @param {HTMLElement} root @param {Store} _store */
export function deferredPage(root, _store) {
  const summary = h('p', { class: 'muted', id: 'deferred-summary' });
  const body = h('tbody');
  replace(
    root,
    h('section', { class: 'deferred' }, h('div', { class: 'toolbar' }, h('h2', {}, 'Deferred runs')), summary),
    h(
      'table',
      { class: 'deferred' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'handler'),
          h('th', {}, 'subject'),
          h('th', {}, 'sequence'),
          h('th', {}, 'event'),
          h('th', {}, 'reason'),
          h('th', {}, 'due'),
          h('th', {}, 'waiting'),
        ),
      ),
      body,
    ),
  );

  async function load() {
    try {
      const page = await get('/api/deferred');
      if (!page.available) {
        summary.textContent = 'The memory store keeps no deferred runs: runs that wait stay in their lease.';
        replace(body);
        return;
      }
      const byHandler = new Map();
      for (const r of page.runs) byHandler.set(r.handler, (byHandler.get(r.handler) ?? 0) + 1);
      summary.textContent =
        page.runs.length === 0 ? 'No run waits: every handler is up to date.' : [...byHandler].map(([handler, n]) => `${handler}: ${n}`).join(' · ');
      replace(
        body,
        ...page.runs.map((/** @type {any} */ r) =>
          h(
            'tr',
            { dataset: { key: r.key, reason: r.reason } },
            h('td', {}, r.handler),
            h('td', { class: 'mono' }, r.subject),
            h('td', { class: 'num' }, r.sequence),
            h('td', { class: 'mono link', onclick: () => (location.hash = `#/events/${encodeURIComponent(r.eventId)}`) }, r.eventId),
            h('td', {}, badge(r.reason)),
            h('td', {}, r.retryAt <= page.at ? 'now' : `in ${seconds(r.retryAt - page.at)}`),
            h('td', { title: `first deferred ${formatTime(r.deferredAt)}` }, seconds(page.at - r.deferredAt)),
          ),
        ),
      );
    } catch (err) {
      summary.textContent = err instanceof Problem ? err.message : String(err);
    }
  }

  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => clearInterval(timer);
}
