/**
 * docs/architecture.md, "One lease, from pull to ack", checked against what the worker does: one
 * event is run by a real worker against the emulator, every call that one lease makes to the
 * platform, the store, the handler and the event bus is recorded in order, and the order of the
 * steps those calls belong to must be the order in which the page numbers them.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { MemoryIdempotencyStore } from '../../src/idempotency/memory.js';
import { startWorker } from '../../src/worker/start.js';
import { createConsumer, emulatorForFile, FAST, silent, TENANT, tempDir, untilCommitted, workerConfig } from '../worker/harness.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HANDLERS = join(ROOT, 'test/fixtures/lease-steps');

/** The section's numbered steps: `N. **Name.**`, in the page's order. */
function docSteps(): string[] {
  const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = page.slice(page.indexOf('## One lease, from pull to ack'), page.indexOf('## Processes and threads'));
  return [...section.matchAll(/^(\d+)\. \*\*([^*]+?)\.\*\*/gm)].map((m) => m[2] as string);
}

/** Which step each recorded call belongs to, and the name the step's text must cite for it. */
const STEP_OF: Record<string, { step: string; cites: string }> = {
  pull: { step: 'Pull', cites: 'PullController.maybePull' },
  'lease:pulled': { step: 'Hold', cites: 'HeldLease' },
  claim: { step: 'Claim', cites: 'IdempotencyStore.claim' },
  handler: { step: 'Run', cites: 'HandlerRun.start' },
  'run:done': { step: 'Record', cites: 'HandlerRun.end' },
  markDone: { step: 'Record', cites: 'DoneMarkWriter' },
  acknowledge: { step: 'Ack', cites: 'acknowledgeLease' },
  'ack:done': { step: 'Ack', cites: 'acknowledgeLease' },
};

describe('docs/architecture.md, one lease from pull to ack', () => {
  const env = emulatorForFile();

  it("the calls of one lease come in the order of the page's steps, and each step cites the code that makes them", async () => {
    const steps = docSteps();
    expect(steps).toEqual(['Pull', 'Hold', 'Claim', 'Order', 'Start', 'Run', 'Record', 'End the event', 'Ack']);
    const calls: string[] = [];
    (globalThis as { leaseSteps?: string[] }).leaseSteps = calls;
    const store = new MemoryIdempotencyStore({ doneTtlMs: 600_000 });
    const claim = store.claim.bind(store);
    const markDone = store.markDone.bind(store);
    store.claim = (keys, owner, ttl) => (calls.push('claim'), claim(keys, owner, ttl));
    store.markDone = (keys) => (calls.push('markDone'), markDone(keys));
    const destination = await createConsumer(env.emulator, 'lease-steps');
    const client = createClient({ baseUrl: env.emulator.url, tenant: TENANT, clientId: 'dev-client', clientSecret: 'dev-secret' });
    const [event] = env.emulator.appendEvents(TENANT, [{ type: 'lease.steps', subject: 's-1', data: {} }]);
    const worker = await startWorker(workerConfig(env.emulator, destination, tempDir('lease-steps'), { handlersDir: HANDLERS, workers: 1, maxLeases: 1 }), {
      logger: silent,
      store,
      timings: FAST,
      client: {
        ensureCredential: (signal) => client.ensureCredential(signal),
        pull: async (id, params, signal) => {
          const result = await client.pull(id, params, signal);
          // Only the pull that brought the lease is one of its steps (the others found nothing).
          if (result.status === 200) calls.push('pull');
          return result;
        },
        acknowledge: (id, ack, signal) => (calls.push('acknowledge'), client.acknowledge(id, ack, signal)),
      },
    });
    env.running.push(worker);
    worker.events.on('lease:pulled', () => void calls.push('lease:pulled'));
    worker.events.on('run:done', () => void calls.push('run:done'));
    worker.events.on('ack:done', () => void calls.push('ack:done'));
    try {
      await untilCommitted(env.emulator, destination);
    } finally {
      await client.close();
    }
    const named = calls.map((call) => (call === `handler ${event?.id}` ? 'handler' : call));
    expect(named).toEqual(['pull', 'lease:pulled', 'claim', 'handler', 'run:done', 'markDone', 'acknowledge', 'ack:done']);

    const positions = named.map((call) => steps.indexOf((STEP_OF[call] as { step: string }).step));
    expect(positions, `steps of ${named.join(', ')}`).toEqual([...positions].sort((a, b) => a - b));
    const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    for (const { step, cites } of Object.values(STEP_OF)) {
      // The step's text: from its label to the next numbered step (or the list's end).
      const from = page.indexOf(`**${step}.**`);
      const rest = page.slice(from);
      const text = rest.slice(0, rest.search(/\n(\d+\. \*\*|\n)/));
      expect(text, `step ${step} cites ${cites}`).toContain(cites);
    }
  });
});
