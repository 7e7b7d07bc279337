// @ts-check
/** Limits: per handler that declares some, what it declared and what its limits do now (the worker's own view, in this process). */
import { get, Problem } from './api.js';
import { h, replace } from './dom.js';

/** @typedef {import('./store.js').Store} Store */
/** @typedef {{ max?: number, perMs: number }} Rate */

const REFRESH_MS = 1_000;

/** @param {number} ms */
function windowText(ms) {
  return ms % 1_000 === 0 ? `${ms / 1_000} s` : `${ms} ms`;
}

/** `20 / 1 s`, or `found / 1 s` for an adaptive rate without a max. @param {Rate} rate */
function rateText(rate) {
  return `${rate.max ?? 'found'} / ${windowText(rate.perMs)}`;
}

/** @param {number} perSecond */
function perSecond(perSecond) {
  return `${Math.round(perSecond * 10) / 10} /s`;
}

/** @param {any} d the declared limits */
function declaredText(d) {
  const parts = [];
  if (d.rate !== undefined) parts.push(`rate ${rateText(d.rate)}`);
  if (d.concurrency !== undefined) parts.push(`concurrency ${d.concurrency}`);
  if (d.perKey !== undefined) {
    const perKey = [
      d.perKey.rate === undefined ? '' : `rate ${rateText(d.perKey.rate)}`,
      d.perKey.concurrency === undefined ? '' : `concurrency ${d.perKey.concurrency}`,
    ].filter(Boolean);
    parts.push(`per key: ${perKey.join(', ')}`);
  }
  if (d.adaptive) parts.push('adaptive');
  return parts.join(' · ');
}

/** The rate allowed now, and below what was declared when the downstream pushed it down. @param {any} l */
function allowedText(l) {
  const parts = [];
  if (l.allowedPerSecond !== null) {
    const max = l.declared.rate?.max;
    const declared = max === undefined ? undefined : (max * 1_000) / l.declared.rate.perMs;
    parts.push(
      declared !== undefined && l.allowedPerSecond < declared
        ? `${perSecond(l.allowedPerSecond)} (declared ${perSecond(declared)})`
        : perSecond(l.allowedPerSecond),
    );
  }
  if (l.perKeyAllowed !== undefined)
    parts.push(
      l.perKeyAllowed.keys === 0 ? 'per key: no key yet' : `per key: lowest ${perSecond(l.perKeyAllowed.lowestPerSecond)} over ${l.perKeyAllowed.keys} key(s)`,
    );
  return parts.join(' · ') || '—';
}

/** @param {HTMLElement} root @param {Store} _store */
export function limitsPage(root, _store) {
  const summary = h('p', { class: 'muted', id: 'limits-summary' });
  const body = h('tbody');
  replace(
    root,
    h('section', { class: 'limits' }, h('div', { class: 'toolbar' }, h('h2', {}, 'Limits')), summary),
    h(
      'table',
      { class: 'limits' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'handler'),
          h('th', {}, 'declared'),
          h('th', {}, 'allowed now'),
          h('th', { class: 'num' }, 'in flight'),
          h('th', { class: 'num', title: 'runs waiting in their lease for a permit' }, 'waiting'),
          h('th', { class: 'num', title: 'runs deferred to the store until their limit lets them start' }, 'deferred'),
          h('th', { class: 'num', title: 'RetryLaterError, or a 429/503 with Retry-After to the forwarding handler' }, '429s seen'),
        ),
      ),
      body,
    ),
  );

  async function load() {
    try {
      const page = await get('/api/limits');
      if (!page.running) summary.textContent = 'No worker runs now (it is starting, or the saved handlers did not load: see the message above).';
      else if (page.handlers.length === 0)
        summary.textContent = 'No handler declares limits (limits on defineHandler: docs/handlers.md, "Protecting a downstream").';
      else
        summary.textContent =
          page.scope === 'deployment'
            ? "The limits hold across every replica sharing the idempotency store; the counts are this process's."
            : 'The limits hold in this process (a redis:// or postgres:// idempotency store shares them across replicas).';
      replace(
        body,
        ...page.handlers.map((/** @type {any} */ l) =>
          h(
            'tr',
            { dataset: { handler: l.handler } },
            h('td', {}, l.handler),
            h('td', { class: 'declared' }, declaredText(l.declared)),
            h('td', { class: 'allowed' }, allowedText(l)),
            h('td', { class: 'num in-flight' }, l.declared.concurrency === undefined ? String(l.inFlight) : `${l.inFlight} / ${l.declared.concurrency}`),
            h('td', { class: 'num waiting' }, l.waiting),
            h('td', { class: 'num deferred' }, l.deferred === null ? '—' : l.deferred),
            h('td', { class: 'num throttles' }, l.throttles),
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
