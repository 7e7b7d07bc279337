import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { CloudEvent } from '../../src/types.js';
import { METRIC_NAMES } from '../../src/observability/metrics.js';
import { DEPRECATED_EVENTS, type WorkerEventMap } from '../../src/observability/worker-events.js';
import { createWorkerEventBus } from '../../src/worker/event-bus.js';
import { REPO_ROOT } from '../cli/cli-process.js';

/**
 * The bus emits a deprecated event name (docs/api.md "Deprecated names") right after its new name, with
 * the payload the old name always had; only when someone listens to it.
 */
const event = {
  specversion: '1.0',
  id: 'e-1',
  source: 's',
  type: 't',
  subject: 'sub',
  time: '2026-01-01T00:00:00Z',
  sequence: '1',
  data: {},
} as unknown as CloudEvent;

describe('deprecated event names', () => {
  it('lease:pulled is also batch:pulled, with deliveryAttempt as attempt, after it', () => {
    const bus = createWorkerEventBus(pino({ level: 'silent' }));
    const heard: string[] = [];
    let old: WorkerEventMap['batch:pulled'][0] | undefined;
    bus.on('lease:pulled', () => heard.push('lease:pulled'));
    bus.on('batch:pulled', (e) => {
      heard.push('batch:pulled');
      old = e;
    });
    bus.emit('lease:pulled', { workerId: 'w-0', leaseId: 'l', generation: 2, deliveryAttempt: 3, events: [event] });
    expect(heard).toEqual(['lease:pulled', 'batch:pulled']);
    expect(old).toEqual({ workerId: 'w-0', leaseId: 'l', generation: 2, attempt: 3, events: [event] });
  });

  it('run:done is also event:done and pull:crashed also loop:crashed, with the same payload', () => {
    const bus = createWorkerEventBus(pino({ level: 'silent' }));
    const done = { workerId: 'w-0', event, handler: 'h', outcome: 'ok' as const, durationMs: 4, attempt: 1 };
    const crashed = { workerId: 'w-1', error: new Error('bug'), restartInMs: 500 };
    const heard: unknown[] = [];
    bus.on('event:done', (e) => heard.push(e));
    bus.on('loop:crashed', (e) => heard.push(e));
    bus.emit('run:done', done);
    bus.emit('pull:crashed', crashed);
    expect(heard).toEqual([done, crashed]);
  });

  it('a listener of only the old name hears it; a throwing one is counted under its own name', () => {
    const bus = createWorkerEventBus(pino({ level: 'silent' }));
    const errors: string[] = [];
    bus.on('listener:error', (e) => errors.push(e.event));
    bus.on('event:done', () => {
      throw new Error('old listener bug');
    });
    expect(bus.emit('run:done', { workerId: 'w', event, handler: undefined, outcome: 'ok', durationMs: 0 })).toBe(true);
    expect(errors).toEqual(['event:done']);
  });
});

describe('docs/api.md "Deprecated names"', () => {
  const rows = readFileSync(join(REPO_ROOT, 'docs/api.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| old name'));
  const rowOf = (oldName: string) => rows.find((row) => row.split('|')[1]?.includes(`\`${oldName}\``));

  it('has a row for each deprecated event, naming its new name', () => {
    for (const [now, { name }] of Object.entries(DEPRECATED_EVENTS)) expect(rowOf(name)?.split('|')[2], name).toContain(`\`${now}\``);
  });

  it('has a row for the metric under its old name, naming the new one', () => {
    expect(rowOf(METRIC_NAMES.events)?.split('|')[2]).toContain(`\`${METRIC_NAMES.runs}\``);
  });
});
