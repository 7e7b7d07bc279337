// @ts-check
/** Consumer: the emulator's view of the durable consumer (cursor, lag, leases), pause/resume, and fault injection. */
import { call, Problem } from './api.js';
import { h, replace } from './dom.js';
import { fieldErrors } from './field-errors.js';

/** @typedef {import('./store.js').Store} Store */
/** @typedef {import('./store.js').ConsumerView} ConsumerView */

const ROUTES = ['pull', 'ack', 'ingest', 'token', 'read', 'other'];
const CHART = { width: 640, height: 140, pad: 28 };

/** @param {HTMLElement} root @param {Store} store */
export function consumerPage(root, store) {
  const stats = h('div', { class: 'stats' });
  const pause = h('button', { type: 'button', id: 'pause-button', onclick: () => void togglePause() });
  const chart = h('div', { class: 'chart' });
  const leases = h('tbody');
  const faultForm = faultsForm(store);
  replace(
    root,
    h(
      'div',
      { class: 'columns' },
      h(
        'div',
        {},
        h('section', { class: 'consumer' }, h('div', { class: 'toolbar' }, h('h2', {}, 'Consumer'), pause), stats),
        h('section', {}, h('h3', {}, 'Lag over the last minutes'), chart),
      ),
      h(
        'div',
        {},
        h(
          'section',
          {},
          h('h3', {}, 'Leases held'),
          h(
            'table',
            { class: 'leases' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', {}, 'lease'),
                h('th', {}, 'workerId'),
                h('th', {}, 'sequences'),
                h('th', {}, 'generation'),
                h('th', {}, 'attempt'),
                h('th', {}, 'expires in'),
              ),
            ),
            leases,
          ),
        ),
        h('section', {}, h('h3', {}, 'Fault injection'), faultForm.element),
      ),
    ),
  );

  async function togglePause() {
    const paused = store.consumer?.paused === true;
    pause.setAttribute('disabled', '');
    try {
      const { consumer } = await call('POST', `/api/consumer/${paused ? 'resume' : 'pause'}`);
      store.setConsumer(consumer);
    } catch (err) {
      store.addNotice('error', err instanceof Problem ? err.message : String(err));
    } finally {
      pause.removeAttribute('disabled');
    }
  }

  function render() {
    const c = store.consumer;
    if (c === undefined) return replace(stats, h('p', { class: 'muted' }, 'reading the emulator…'));
    if (!c.reachable) {
      replace(stats, h('p', { class: 'error' }, `the emulator cannot be read: ${c.error ?? 'unknown error'}`));
      return;
    }
    pause.textContent = c.paused ? 'Resume' : 'Pause';
    pause.dataset.paused = String(c.paused);
    const stat = (/** @type {string} */ label, /** @type {string | number} */ value, /** @type {string} */ name) =>
      h('div', { class: 'stat', dataset: { stat: name } }, h('span', { class: 'label' }, label), h('span', { class: 'value' }, String(value)));
    replace(
      stats,
      stat('state', c.paused ? 'paused' : 'running', 'state'),
      stat('head', c.head ?? '—', 'head'),
      stat('committed', c.committed ?? '—', 'committed'),
      stat('lag (events)', c.lag, 'lag'),
      stat('leased', c.leased, 'leased'),
      stat('waiting for redelivery', c.pendingRedelivery, 'pending'),
    );
    replace(chart, lagChart(store.lag));
    renderLeases();
    faultForm.show(c.faults);
  }

  function renderLeases() {
    const c = store.consumer;
    if (c === undefined) return;
    const now = Date.now() + store.clockOffsetMs;
    replace(
      leases,
      ...c.leases.map((l) => {
        const seconds = Math.max(0, Math.round((Date.parse(l.expiresAt) - now) / 1000));
        return h(
          'tr',
          { dataset: { lease: l.leaseId } },
          h('td', { class: 'mono' }, l.leaseId),
          h('td', {}, l.workerId ?? '(no workerId)'),
          h('td', { class: 'num' }, l.firstSequence === l.lastSequence ? l.firstSequence : `${l.firstSequence}–${l.lastSequence}`),
          h('td', { class: 'num' }, l.generation),
          h('td', { class: 'num' }, l.attempt),
          h('td', { class: 'num countdown' }, `${seconds} s`),
        );
      }),
    );
    if (c.leases.length === 0) leases.append(h('tr', {}, h('td', { colspan: 6, class: 'empty' }, 'No lease held right now.')));
  }

  const off = store.on('consumer', render);
  // The countdowns move between samples too.
  const ticker = setInterval(renderLeases, 250);
  render();
  return () => {
    off();
    clearInterval(ticker);
  };
}

/** @param {Array<{ at: number, lag: number }>} points */
function lagChart(points) {
  const { width, height, pad } = CHART;
  const svgNs = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(svgNs, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('class', 'lag-chart');
  if (points.length < 2) {
    const text = document.createElementNS(svgNs, 'text');
    text.setAttribute('x', String(pad));
    text.setAttribute('y', String(height / 2));
    text.textContent = 'collecting samples…';
    svg.append(text);
    return svg;
  }
  const first = points[0].at;
  const span = Math.max(1, points[points.length - 1].at - first);
  const max = Math.max(1, ...points.map((p) => p.lag));
  const x = (/** @type {number} */ at) => pad + ((at - first) / span) * (width - 2 * pad);
  const y = (/** @type {number} */ lag) => height - pad - (lag / max) * (height - 2 * pad);
  const line = document.createElementNS(svgNs, 'polyline');
  line.setAttribute('points', points.map((p) => `${x(p.at).toFixed(1)},${y(p.lag).toFixed(1)}`).join(' '));
  line.setAttribute('class', 'line');
  const axis = document.createElementNS(svgNs, 'polyline');
  axis.setAttribute('points', `${pad},${pad} ${pad},${height - pad} ${width - pad},${height - pad}`);
  axis.setAttribute('class', 'axis');
  const label = (/** @type {string} */ text, /** @type {number} */ lx, /** @type {number} */ ly) => {
    const t = document.createElementNS(svgNs, 'text');
    t.setAttribute('x', String(lx));
    t.setAttribute('y', String(ly));
    t.textContent = text;
    return t;
  };
  const minutes = Math.round(span / 6000) / 10;
  svg.append(axis, line, label(String(max), 2, pad + 4), label('0', 2, height - pad), label(`${minutes} min`, width - pad - 30, height - 6));
  return svg;
}

/** The fault toggles: a 5xx rate and a latency, each on chosen routes (none checked: every public route). */
function faultsForm(/** @type {Store} */ store) {
  const errorRate = h('input', { type: 'number', name: 'errorRate', min: 0, max: 1, step: 0.05, value: 0 });
  const errorStatus = h('select', { name: 'errorStatus' }, h('option', { value: '503' }, '503'), h('option', { value: '500' }, '500'));
  const latencyMs = h('input', { type: 'number', name: 'latencyMs', min: 0, max: 60000, step: 50, value: 0 });
  const routeBoxes = (/** @type {string} */ name) => ROUTES.map((r) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name, value: r }), r));
  const errorRoutes = h('span', { class: 'routes', dataset: { field: 'errorRoutes' } }, ...routeBoxes('errorRoutes'));
  const latencyRoutes = h('span', { class: 'routes', dataset: { field: 'latencyRoutes' } }, ...routeBoxes('latencyRoutes'));
  const status = h('p', { class: 'form-status' });
  const element = h(
    'form',
    { class: 'faults', id: 'faults-form', onsubmit: (/** @type {Event} */ e) => (e.preventDefault(), void apply()) },
    h(
      'fieldset',
      {},
      h('legend', {}, '5xx answers'),
      h('label', { dataset: { field: 'errorRate' } }, 'rate (0–1) ', errorRate),
      h('label', { dataset: { field: 'errorStatus' } }, 'status ', errorStatus),
      h('div', {}, 'on ', errorRoutes, h('span', { class: 'muted' }, ' (none: every route)')),
    ),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Latency'),
      h('label', { dataset: { field: 'latencyMs' } }, 'added ms ', latencyMs),
      h('div', {}, 'on ', latencyRoutes, h('span', { class: 'muted' }, ' (none: every route)')),
    ),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'submit', id: 'apply-faults' }, 'Apply'),
      h('button', { type: 'button', id: 'clear-faults', onclick: () => void clear() }, 'Clear all faults'),
    ),
    status,
  );
  const errors = fieldErrors(element);
  let edited = false;
  element.addEventListener('input', () => (edited = true));

  const checked = (/** @type {string} */ name) =>
    [...element.querySelectorAll(`input[name="${name}"]:checked`)].map((el) => /** @type {HTMLInputElement} */ (el).value);
  async function apply() {
    errors.clear();
    const body = {
      errorRate: Number(/** @type {HTMLInputElement} */ (errorRate).value),
      errorStatus: Number(/** @type {HTMLSelectElement} */ (errorStatus).value),
      errorRoutes: checked('errorRoutes').length > 0 ? checked('errorRoutes') : null,
      latencyMs: Number(/** @type {HTMLInputElement} */ (latencyMs).value),
      latencyRoutes: checked('latencyRoutes').length > 0 ? checked('latencyRoutes') : null,
    };
    await send('PUT', body, 'faults applied');
  }
  async function clear() {
    errors.clear();
    await send('DELETE', undefined, 'no fault any more');
  }
  async function send(/** @type {string} */ method, /** @type {unknown} */ body, /** @type {string} */ done) {
    status.textContent = 'sending…';
    try {
      const { consumer } = await call(method, '/api/faults', body);
      edited = false;
      status.textContent = done;
      store.setConsumer(consumer);
    } catch (err) {
      if (err instanceof Problem) errors.show(err);
      else status.textContent = String(err);
    }
  }
  /** Shows the faults in force, unless the user is editing the form. @param {Record<string, any>} faults */
  function show(faults) {
    if (edited) return;
    /** @type {HTMLInputElement} */ (errorRate).value = String(faults.errorRate ?? 0);
    /** @type {HTMLSelectElement} */ (errorStatus).value = String(faults.errorStatus ?? 503);
    /** @type {HTMLInputElement} */ (latencyMs).value = String(faults.latencyMs ?? 0);
    for (const name of ['errorRoutes', 'latencyRoutes']) {
      const on = new Set(faults[name] ?? []);
      for (const box of element.querySelectorAll(`input[name="${name}"]`))
        /** @type {HTMLInputElement} */ (box).checked = on.has(/** @type {HTMLInputElement} */ (box).value);
    }
  }
  return { element, show };
}
