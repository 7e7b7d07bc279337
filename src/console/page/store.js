// @ts-check
/**
 * What the page knows, kept up to date by the server's event stream (/api/stream), and who wants
 * to hear of it. The browser reconnects an EventSource by itself after a dropped connection; one
 * that failed outright (the process was down when it retried) is made anew here. A `hello` with
 * another instance id means the process restarted: what was shown belongs to the old one.
 */

/** @typedef {{ id: string, type: string, subject: string, sequence: string, seenAt: number, status: string, deliveries: number,
 *   delivery: { workerId: string, leaseId: string, generation: number, attempt: number, pulledAt: number, ack?: { sent: string, status: string } },
 *   handlers: Array<{ handler: string, outcome: string, attempt: number, durationMs: number, logs: number }> }} EventSummary */
/** @typedef {{ at: number, destination: string, reachable: boolean, error?: string, paused: boolean, head: string | null, committed: string | null,
 *   lag: number, leased: number, pendingRedelivery: number, faults: Record<string, any>,
 *   leases: Array<{ leaseId: string, workerId: string | null, generation: number, attempt: number, firstSequence: string, lastSequence: string, expiresAt: string }> }} ConsumerView */
/** @typedef {'events' | 'consumer' | 'dead-letters' | 'connection' | 'notice' | 'reload'} Topic */

const RECONNECT_MS = 1000;
const MAX_LAG_POINTS = 600;
const MAX_NOTICES = 5;

export class Store {
  constructor() {
    /** @type {Map<string, EventSummary>} */
    this.events = new Map();
    /** Ids changed by the last message (the detail view reloads when its event is among them). @type {Set<string>} */
    this.changed = new Set();
    /** @type {ConsumerView | undefined} */
    this.consumer = undefined;
    /** Server clock minus ours, in ms (lease countdowns use the server's). */
    this.clockOffsetMs = 0;
    /** @type {Array<{ at: number, lag: number }>} */
    this.lag = [];
    /** @type {{ instance: string, destination: string, maxEvents: number, deadLetterSink: string } | undefined} */
    this.hello = undefined;
    /** @type {'connecting' | 'live' | 'reconnecting'} */
    this.connection = 'connecting';
    /** @type {Array<{ at: number, level: string, message: string }>} */
    this.notices = [];
    /** The last reload of the handlers after a save (`dev` watching its folder). @type {{ at: number, state: 'loaded' | 'failed', message: string, error?: string, changed: string[] } | undefined} */
    this.reload = undefined;
    /** @type {Map<Topic, Set<() => void>>} */
    this.listeners = new Map();
    /** @type {EventSource | undefined} */
    this.source = undefined;
  }

  /** @param {Topic} topic @param {() => void} listener @returns {() => void} */
  on(topic, listener) {
    let set = this.listeners.get(topic);
    if (set === undefined) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /** @param {Topic} topic */
  emit(topic) {
    for (const listener of this.listeners.get(topic) ?? []) listener();
  }

  /** Newest (highest sequence) first. */
  eventList() {
    return [...this.events.values()].sort((a, b) => compareSequences(b.sequence, a.sequence));
  }

  connect() {
    const source = new EventSource('/api/stream');
    this.source = source;
    source.onopen = () => this.setConnection('live');
    source.onerror = () => {
      this.setConnection('reconnecting');
      if (source.readyState === EventSource.CLOSED) setTimeout(() => this.connect(), RECONNECT_MS);
    };
    /** @param {string} name @param {(data: any) => void} handle */
    const listen = (name, handle) => source.addEventListener(name, (message) => handle(JSON.parse(/** @type {MessageEvent} */ (message).data)));
    listen('hello', (hello) => {
      if (this.hello !== undefined && this.hello.instance !== hello.instance) this.addNotice('info', 'the worker restarted: showing its new events');
      this.hello = hello;
      this.connection = 'live';
      this.emit('connection');
    });
    listen('events', (list) => {
      this.events = new Map(list.map((/** @type {EventSummary} */ e) => [e.id, e]));
      this.changed = new Set(this.events.keys());
      this.emit('events');
    });
    listen('events:changed', (list) => {
      this.changed = new Set();
      for (const summary of list) {
        this.events.set(summary.id, summary);
        this.changed.add(summary.id);
      }
      this.emit('events');
    });
    listen('events:dropped', (ids) => {
      for (const id of ids) this.events.delete(id);
      this.changed = new Set();
      this.emit('events');
    });
    listen('consumer', (view) => this.setConsumer(view));
    listen('lag', (points) => {
      this.lag = points;
      this.emit('consumer');
    });
    listen('dead-letters:changed', () => this.emit('dead-letters'));
    listen('notice', (notice) => this.addNotice(notice.level, notice.message));
    listen('reload', (reload) => {
      this.reload = reload;
      this.emit('reload');
    });
  }

  /** @param {ConsumerView} view */
  setConsumer(view) {
    this.consumer = view;
    this.clockOffsetMs = view.at - Date.now();
    const last = this.lag[this.lag.length - 1];
    if (view.reachable && (last === undefined || last.at < view.at)) {
      this.lag.push({ at: view.at, lag: view.lag });
      if (this.lag.length > MAX_LAG_POINTS) this.lag.shift();
    }
    this.emit('consumer');
  }

  /** @param {'connecting' | 'live' | 'reconnecting'} state */
  setConnection(state) {
    if (this.connection === state) return;
    this.connection = state;
    this.emit('connection');
  }

  /** @param {string} level @param {string} message */
  addNotice(level, message) {
    this.notices.push({ at: Date.now(), level, message });
    if (this.notices.length > MAX_NOTICES) this.notices.shift();
    this.emit('notice');
  }
}

/** Decimal strings without leading zeros: longer is larger. @param {string} a @param {string} b */
export function compareSequences(a, b) {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
