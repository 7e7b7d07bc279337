import { setTimeout as sleep } from 'node:timers/promises';
import { openEffects } from './effects.mjs';

// The compiled client, like the worker processes (see worker-child.ts).
const { createClient } = (await import(new URL('../../dist/client/index.js', import.meta.url).href)) as typeof import('../../src/client/index.js');

export interface LoopRun {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  /** CPU of this process per event, µs (client work only: nothing else runs here). */
  cpuUsPerEvent: number;
}

export type LoopClient = ReturnType<typeof createClient>;

/**
 * A client for `runLoops`. Pass the same one to every call that should count as one long-lived
 * loop process: a new client's code runs slower for its first few hundred thousand events, even in a
 * warm process, so a warm-up on one client does not warm another.
 */
export function createLoopClient(url: string, loops: number): LoopClient {
  return createClient({ baseUrl: url, tenant: 'dev-tenant', clientId: 'dev-client', clientSecret: 'dev-secret', connections: loops * 2 });
}

/**
 * `loops` hand-written loops with our platform client: pull (limit), then either await a
 * `handlerDelayMs` timer for each event in turn (the naive worker one writes first), and append its id to
 * `effectsFile` when given (the same work as the benchmark's handler), or do nothing (the raw
 * pull+ack ceiling), then ack ok. Runs until the stream is drained (`expected` events).
 */
export async function runLoops(
  url: string,
  options: { loops: number; limit: number; handlerDelayMs: number; expected: number; client?: LoopClient; effectsFile?: string },
): Promise<LoopRun> {
  const client = options.client ?? createLoopClient(url, options.loops);
  const effects = options.effectsFile === undefined ? undefined : await openEffects(options.effectsFile);
  await client.ensureCredential();
  let events = 0;
  let firstPullMs: number | undefined;
  let lastAckMs = 0;
  let cpuAtFirst: NodeJS.CpuUsage | undefined;
  let cpuUs = 0;
  const loop = async (index: number) => {
    const workerId = `bench-loop-${index}-${process.pid}`;
    while (events < options.expected) {
      const result = await client.pull('dev-consumer', { limit: options.limit, visibilitySeconds: 60, workerId });
      if (result.status !== 200) {
        await sleep(5);
        continue;
      }
      if (firstPullMs === undefined) {
        firstPullMs = Date.now();
        cpuAtFirst = process.cpuUsage();
      }
      for (const event of result.batch.events) {
        if (options.handlerDelayMs > 0) await sleep(options.handlerDelayMs);
        if (effects !== undefined) await effects.append(event.id);
      }
      const ack = await client.acknowledge('dev-consumer', { leaseId: result.batch.leaseId, generation: result.batch.generation, status: 'ok' });
      if (ack.status !== 'committed') throw new Error(`ack answered ${ack.status}`);
      events += result.batch.events.length;
      lastAckMs = Date.now();
      const used = process.cpuUsage(cpuAtFirst);
      cpuUs = used.user + used.system;
    }
  };
  await Promise.all(Array.from({ length: options.loops }, (_, i) => loop(i)));
  await effects?.close();
  if (options.client === undefined) await client.close();
  const seconds = (lastAckMs - (firstPullMs ?? lastAckMs)) / 1000;
  return { events, seconds, eventsPerSecond: events / seconds, cpuUsPerEvent: cpuUs / events };
}
