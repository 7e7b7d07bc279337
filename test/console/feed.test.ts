/**
 * The console's feed on a real worker (in-process emulator, real handler modules in both isolation
 * modes): every event with its deliveries, acks, handler runs, log lines and the stack of a failure.
 */
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DevConsole } from '../../src/console/index.js';
import { ConsoleFeed } from '../../src/console/feed.js';
import type { StreamMessages } from '../../src/console/protocol.js';
import { createLogger } from '../../src/observability/logger.js';
import { createWorkerEventBus } from '../../src/worker/event-bus.js';
import { startWorker } from '../../src/worker/start.js';
import { appendBehave, createConsumer, emulatorForFile, FAST, tempDir, untilCommitted, waitFor, workerConfig } from '../worker/harness.js';

const HANDLERS = fileURLToPath(new URL('../fixtures/console-handlers', import.meta.url));
const t = emulatorForFile();
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A DevConsole wired as `dev` wires it: the process logger taps its lines, threads find its channel in their environment. */
function devConsoleFor(maxEvents = 100) {
  const devConsole = new DevConsole({ maxEvents });
  devConsole.shareWithThreads();
  cleanups.push(() => devConsole.close());
  const discard = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const logger = createLogger({ level: 'info', destination: discard, tap: devConsole.tap });
  return { devConsole, logger };
}

describe.each(['none', 'thread'] as const)('the console feed of a worker (isolation %s)', (isolation) => {
  it('shows each event with its deliveries, acks, handler runs, log lines and the stack of a failure', async () => {
    const { devConsole, logger } = devConsoleFor();
    const destination = await createConsumer(t.emulator, 'console-feed');
    const config = workerConfig(t.emulator, destination, tempDir('console-feed'), { handlersDir: HANDLERS, isolation, logLevel: 'info' });
    const worker = await startWorker(config, { logger, timings: FAST, healthServer: false });
    t.running.push(worker);
    devConsole.attach(worker);

    const fails = ['none', 'once', 'permanent'];
    const [ok, once, bad] = appendBehave(
      t.emulator,
      3,
      (i) => ({ n: i, fail: fails[i] }),
      (i) => `entry-${fails[i]}`,
      'console.test',
    );
    await untilCommitted(t.emulator, destination);
    const feed = devConsole.feed;
    // A thread's lines come over a channel, after the outcome maybe: wait for the last of them. And
    // the emulator commits as it serves the ack, a moment before the worker reads the answer (ack:done).
    await waitFor(
      'the log lines of every run',
      () => feed.get(ok!.id)?.logs.length === 2 && feed.get(once!.id)?.logs.some((l) => l.msg === 'handled entry-once'),
    );
    await waitFor('the answer to the last ack', () => [ok!, once!, bad!].every((event) => feed.get(event.id)?.delivery.ack !== undefined));

    expect(feed.list().map((e) => [e.subject, e.status])).toEqual([
      ['entry-permanent', 'dead_lettered'],
      ['entry-once', 'ok'],
      ['entry-none', 'ok'],
    ]);

    // The three came in one batch; `entry-once` failed, waited its backoff and ran again in the same
    // lease: one delivery each, acked ok.
    const deliveries = (id: string) => feed.get(id)!.deliveryHistory.map((d) => [d.attempt, d.generation, d.ack?.sent, d.ack?.status]);
    for (const event of [ok!, once!, bad!]) expect(deliveries(event.id)).toEqual([[1, 1, 'ok', 'committed']]);
    const okDetail = feed.get(ok!.id)!;
    // One of the process's pool of workerIds (`<prefix>-0..`).
    expect(okDetail.delivery).toMatchObject({ attempt: 1, workerId: expect.stringMatching(new RegExp(`^${config.workerIdPrefix}-\\d+$`)) });
    expect(okDetail.runs.map((r) => [r.handler, r.outcome, r.attempt])).toEqual([['shop', 'ok', 1]]);
    expect(okDetail.logs.map((l) => [l.level, l.msg, l.handler, l.attempt])).toEqual([
      ['info', 'handling entry-none', 'shop', 1],
      ['warn', 'handled entry-none', 'shop', 1],
    ]);
    expect(JSON.parse(okDetail.logs[0]!.fields!)).toEqual({ step: 'start', n: 0 });
    expect(JSON.parse(okDetail.data)).toEqual({ n: 0, fail: 'none' });

    const onceDetail = feed.get(once!.id)!;
    expect(onceDetail.runs.map((r) => [r.outcome, r.attempt])).toEqual([
      ['failed', 1],
      ['ok', 2],
    ]);
    // The handler's lines of both attempts, and the worker's line about the failure (in time order;
    // lines of the same millisecond may come in either order from a thread and the main thread).
    expect(onceDetail.logs.map((l) => [l.attempt, l.level, l.msg]).sort()).toEqual([
      [1, 'info', 'handling entry-once'],
      [1, 'warn', 'handler shop failed (attempt 1 of 3): first attempt fails (entry-once)'],
      [2, 'info', 'handling entry-once'],
      [2, 'warn', 'handled entry-once'],
    ]);
    const failed = onceDetail.runs[0]!;
    expect(failed.error?.message).toBe('first attempt fails (entry-once)');
    // run:done carries no stack: it comes from the worker's log line of the failure.
    expect(failed.error?.stack).toMatch(/^Error: first attempt fails \(entry-once\)\n\s+at /);

    const badDetail = feed.get(bad!.id)!;
    expect(badDetail.runs[0]).toMatchObject({
      outcome: 'dead_lettered',
      attempt: 1,
      error: { code: 'DW_ERR_PERMANENT', stack: expect.stringContaining('cannot ever handle entry-permanent') },
    });
    expect(badDetail.runs).toHaveLength(1);
  });
});

describe('the console feed', () => {
  it('keeps the newest --console-events events and tells its subscribers which changed and which left', async () => {
    const { devConsole, logger } = devConsoleFor(3);
    const destination = await createConsumer(t.emulator, 'console-bound');
    const worker = await startWorker(workerConfig(t.emulator, destination, tempDir('console-bound'), { handlersDir: HANDLERS, logLevel: 'info', limit: 2 }), {
      logger,
      timings: FAST,
      healthServer: false,
    });
    t.running.push(worker);
    devConsole.attach(worker);
    const changed = new Set<string>();
    const dropped: string[] = [];
    devConsole.feed.subscribe({
      changed: (summaries, ids) => (summaries.forEach((s) => changed.add(s.id)), dropped.push(...ids)),
      deadLettersChanged: () => {},
      notice: () => {},
    });

    const events = appendBehave(
      t.emulator,
      7,
      (i) => ({ n: i }),
      (i) => `entry-${i}`,
      'console.test',
    );
    await untilCommitted(t.emulator, destination);
    await waitFor('the last change to reach the subscriber', () => changed.has(events[6]!.id));
    expect(devConsole.feed.list().map((e) => e.sequence)).toEqual(
      events
        .slice(4)
        .reverse()
        .map((e) => e.sequence),
    );
    expect(devConsole.feed.size).toBe(3);
    expect(new Set(dropped)).toEqual(new Set(events.slice(0, 4).map((e) => e.id)));
    // Log lines of an event no longer kept are not kept either.
    expect(devConsole.feed.get(events[0]!.id)).toBeUndefined();
  });

  it('tells its subscribers when handling a pull crashed, when readiness changes and when a breaker opens or closes', () => {
    const feed = new ConsoleFeed({ maxEvents: 10, now: () => 42 });
    cleanups.push(() => feed.close());
    const bus = createWorkerEventBus(createLogger({ level: 'silent' }));
    const detach = feed.attach(bus);
    const notices: StreamMessages['notice'][] = [];
    feed.subscribe({ changed: () => {}, deadLettersChanged: () => {}, notice: (notice) => notices.push(notice) });
    bus.emit('pull:crashed', { workerId: 'w-3', error: new Error('boom'), restartInMs: 1000 });
    bus.emit('ready:changed', { ready: false, reason: 'token refused' });
    bus.emit('ready:changed', { ready: true });
    bus.emit('breaker:state', { handler: 'search', state: 'open', failureRatio: 0.75 });
    bus.emit('breaker:state', { handler: 'search', state: 'closed', failureRatio: 0 });
    detach();
    bus.emit('ready:changed', { ready: false });
    expect(notices).toEqual([
      { at: 42, level: 'error', message: 'w-3 crashed handling a pull: boom (it pulls again in 1000 ms)' },
      { at: 42, level: 'warn', message: 'worker not ready: token refused' },
      { at: 42, level: 'info', message: 'worker ready' },
      { at: 42, level: 'warn', message: 'circuit breaker of handler search open: 75 % of its recent runs failed; its events wait, spending no attempts' },
      { at: 42, level: 'info', message: 'circuit breaker of handler search closed: its events run again' },
    ]);
  });
});
