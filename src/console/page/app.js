// @ts-check
/** The console page: one store fed by the server's event stream, six views chosen by the URL hash. */
import { consumerPage } from './consumer.js';
import { deadLettersPage } from './dead-letters.js';
import { deferredPage } from './deferred.js';
import { formatTime, h, replace } from './dom.js';
import { eventsPage } from './events.js';
import { limitsPage } from './limits.js';
import { sendPage } from './send.js';
import { Store } from './store.js';

/** @typedef {(root: HTMLElement, store: Store, arg: string | undefined) => (() => void)} Page */

/** @type {Record<string, Page>} */
const PAGES = { events: eventsPage, consumer: consumerPage, deferred: deferredPage, limits: limitsPage, 'dead-letters': deadLettersPage, send: sendPage };

const store = new Store();
const root = /** @type {HTMLElement} */ (document.getElementById('page'));
/** @type {(() => void) | undefined} */
let unmount;
let shown = '';

/** `#/events/<id>` -> page `events`, argument the event id. */
function route() {
  const [, name = 'events', ...rest] = location.hash.split('/');
  const page = PAGES[name] === undefined ? 'events' : name;
  const arg = rest.length > 0 ? decodeURIComponent(rest.join('/')) : undefined;
  const key = `${page} ${arg ?? ''}`;
  if (key === shown) return;
  // A new argument on the same page (another event selected) is for the page to follow.
  if (shown.split(' ')[0] === page && root.dispatchEvent(new CustomEvent('route', { detail: arg, cancelable: true })) === false) {
    shown = key;
    return;
  }
  shown = key;
  unmount?.();
  root.replaceChildren();
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('active', /** @type {HTMLElement} */ (link).dataset.page === page);
  unmount = /** @type {Page} */ (PAGES[page])(root, store, arg);
}

function showConnection() {
  const el = /** @type {HTMLElement} */ (document.getElementById('connection'));
  el.dataset.state = store.connection;
  el.textContent = store.connection === 'live' ? '● live' : store.connection === 'reconnecting' ? '○ reconnecting…' : 'connecting…';
  const destination = /** @type {HTMLElement} */ (document.getElementById('destination'));
  destination.textContent = store.hello === undefined ? '' : `consumer ${store.hello.destination}`;
}

function showNotices() {
  const el = /** @type {HTMLElement} */ (document.getElementById('notices'));
  replace(el, ...store.notices.slice(-3).map((n) => h('div', { class: `notice notice-${n.level}` }, `${formatTime(n.at)} ${n.message}`)));
}

/** A save whose handlers failed to load stays on screen until the next save loads. */
function showReload() {
  const el = /** @type {HTMLElement} */ (document.getElementById('reload'));
  const reload = store.reload;
  if (reload === undefined || reload.state === 'loaded') {
    replace(el);
    if (reload !== undefined) store.addNotice('info', reload.message);
    return;
  }
  replace(el, h('div', { class: 'notice notice-error reload-failed' }, `${formatTime(reload.at)} ${reload.message}`));
}

store.on('connection', showConnection);
store.on('reload', showReload);
store.on('notice', showNotices);
window.addEventListener('hashchange', route);
route();
store.connect();
