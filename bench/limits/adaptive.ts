import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PlatformProcess } from '../outage/processes.js';
import { Replica, replicaArgs } from './replicas.js';

/** A downstream that answers 429 (Retry-After: 1) once it has accepted `limit` calls in the last second. */
class Stub {
  limit: number;
  readonly calls: { atMs: number; ok: boolean }[] = [];
  readonly #accepted: number[] = [];
  readonly #server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const nowMs = Date.now();
      while (this.#accepted.length > 0 && (this.#accepted[0] as number) <= nowMs - 1_000) this.#accepted.shift();
      const ok = this.#accepted.length < this.limit;
      if (ok) this.#accepted.push(nowMs);
      this.calls.push({ atMs: nowMs, ok });
      res.writeHead(ok ? 200 : 429, ok ? {} : { 'retry-after': '1' });
      res.end();
    });
  });

  constructor(limit: number) {
    this.limit = limit;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/events`;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

export interface AdaptiveRun {
  store: string;
  /** [10 s, raise): share of 429s and ok calls per second. */
  throttledShare: number;
  okPerSecond: number;
  /** The last 10 s after the stub's limit was raised: ok calls per second. */
  okPerSecondAfterRaise: number;
  raisedTo: number;
  /** Per second from the first call: ok and 429 counts. */
  perSecond: { ok: number; throttled: number }[];
}

/**
 * One replica forwarding (`--forward-url`, `--forward-rate adaptive`) to the stub, which throttles
 * above 60 calls a second; at `raiseAtS` the stub allows `raiseTo`; the replica is stopped at `endAtS`.
 */
export async function runAdaptive(options: { store: string; raiseAtS?: number; raiseTo?: number; endAtS?: number }): Promise<AdaptiveRun> {
  const raiseAtS = options.raiseAtS ?? 35;
  const endAtS = options.endAtS ?? 60;
  const raiseTo = options.raiseTo ?? 120;
  const dir = mkdtempSync(join(tmpdir(), 'dw-limits-adaptive-'));
  const stub = new Stub(60);
  const url = await stub.start();
  const platform = await PlatformProcess.start();
  let replica: Replica | undefined;
  try {
    const events = Array.from({ length: 60 * raiseAtS + raiseTo * (endAtS - raiseAtS) + 500 }, (_, i) => `s${i}`);
    for (let i = 0; i < events.length; i += 500) await platform.append(events.slice(i, i + 500));
    const args = [
      ...replicaArgs(platform.url, dir, { handlers: join(dir, 'no-handlers'), store: options.store, prefix: `bench-limits-adaptive-${Date.now()}` }),
      ...['--forward-url', url, '--forward-rate', 'adaptive'],
    ];
    replica = await Replica.start(args, { DURABLE_WORKER_CLIENT_SECRET: 'dev-secret' }, join(dir, 'replica.log'));
    for (let waited = 0; stub.calls.length === 0 && waited < 30_000; waited += 50) await sleep(50);
    const firstMs = stub.calls[0]?.atMs ?? Date.now();
    await sleep(Math.max(0, firstMs + raiseAtS * 1_000 - Date.now()));
    stub.limit = raiseTo;
    await sleep(Math.max(0, firstMs + endAtS * 1_000 - Date.now()));
    await replica.exitWithin(0);
    const between = (fromS: number, toS: number) => stub.calls.filter((c) => c.atMs >= firstMs + fromS * 1_000 && c.atMs < firstMs + toS * 1_000);
    const steady = between(10, raiseAtS);
    const raised = between(endAtS - 10, endAtS);
    const perSecond = Array.from({ length: endAtS }, (_, s) => {
      const calls = between(s, s + 1);
      return { ok: calls.filter((c) => c.ok).length, throttled: calls.filter((c) => !c.ok).length };
    });
    return {
      store: options.store.replace(/\/\/[^@]*@/, '//'),
      throttledShare: steady.filter((c) => !c.ok).length / Math.max(1, steady.length),
      okPerSecond: steady.filter((c) => c.ok).length / (raiseAtS - 10),
      okPerSecondAfterRaise: raised.filter((c) => c.ok).length / 10,
      raisedTo: raiseTo,
      perSecond,
    };
  } finally {
    if (replica !== undefined && replica.child.exitCode === null) replica.child.kill('SIGKILL');
    await platform.stop();
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
