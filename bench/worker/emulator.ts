import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { waitForOutput } from './child-output.js';

/** The emulator of bench/emulator, in its own process, driven over stdin (`APPEND n`) and HTTP. */
export class EmulatorChild {
  #output = '';
  readonly #child: ChildProcess;
  readonly #exited: Promise<unknown>;
  url = '';

  private constructor(child: ChildProcess) {
    this.#child = child;
    this.#exited = once(child, 'exit');
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.#output += chunk));
  }

  static async start(): Promise<EmulatorChild> {
    const entry = fileURLToPath(new URL('../emulator/emulator-child.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', entry], {
      env: { ...process.env, BENCH_PREFILL_EVENTS: '0', BENCH_CONTROL: '1' },
      stdio: ['pipe', 'pipe', 'inherit'],
      // BENCH_EMULATOR_OWN_GROUP=1: the platform in a session of its own, so that Linux's autogroup
      // scheduler shares the cores between it and the rest as between two terminals, instead of
      // thread by thread with the worker's, which would let a many-threaded worker starve it.
      detached: process.env.BENCH_EMULATOR_OWN_GROUP === '1',
    });
    const em = new EmulatorChild(child);
    em.url = (await em.#waitFor(/READY (\S+)/))[1]!;
    return em;
  }

  #waitFor(pattern: RegExp, from = 0): Promise<RegExpExecArray> {
    return waitForOutput(() => this.#output, pattern, { from, exited: () => this.#child.exitCode !== null, child: 'emulator child' });
  }

  /**
   * Appends `count` events to the dev-tenant stream (the emulator builds them in-process), each with
   * a subject of its own, or with `subjects` > 0 subjects that cycle over that many entries.
   */
  async append(count: number, subjects = 0): Promise<void> {
    const from = this.#output.length;
    this.#child.stdin!.write(`APPEND ${count} ${subjects}\n`);
    await this.#waitFor(/APPENDED \d+ \d+/, from);
  }

  /**
   * `latencyMs` added before the emulator serves each pull and each acknowledgement (its latency
   * fault, POST /_emulator/faults), as a platform that far away would answer; 0 clears it.
   */
  async setLatency(latencyMs: number): Promise<void> {
    const faults = latencyMs > 0 ? { latencyMs, latencyRoutes: ['pull', 'ack'] } : {};
    const response = await fetch(`${this.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(faults),
    });
    if (response.status !== 200) throw new Error(`setting the emulator's faults: ${response.status} ${await response.text()}`);
  }

  /**
   * Appends `count` events in chunks of `chunk`, the next one once fewer than half a chunk are left
   * unconsumed, as a live stream would arrive; resolves once the last chunk is appended. The emulator
   * keeps unconsumed events in memory: a whole warm-up appended at once would leave it holding a
   * million events, and slower for it than it is with a live stream.
   * `subjects` as for `append`.
   */
  async feed(count: number, chunk = 50_000, subjects = 0): Promise<void> {
    for (let appended = 0; appended < count;) {
      const { head, committed } = await this.consumer();
      if (appended === 0 || head - committed < chunk / 2) {
        const next = Math.min(chunk, count - appended);
        await this.append(next, subjects);
        appended += next;
      } else await sleep(20);
    }
  }

  /** dev-consumer as GET /_emulator/state shows it. */
  async consumer(): Promise<{ head: number; committed: number; leased: number }> {
    const state = (await (await fetch(`${this.url}/_emulator/state`)).json()) as {
      tenants: Array<{ id: string; consumers: Array<{ id: string; head: string | null; committed: string | null; leased: number }> }>;
    };
    const consumer = state.tenants.find((t) => t.id === 'dev-tenant')!.consumers.find((c) => c.id === 'dev-consumer')!;
    return { head: Number(consumer.head ?? 0), committed: Number(consumer.committed ?? 0), leased: consumer.leased };
  }

  /** Polls until every appended event is committed and nothing is leased. */
  async waitCaughtUp(timeoutMs = 600_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const c = await this.consumer();
      if (c.committed === c.head && c.leased === 0) return;
      if (Date.now() > deadline) throw new Error(`not caught up: ${JSON.stringify(c)}`);
      await sleep(20);
    }
  }

  async stop(): Promise<void> {
    this.#child.kill('SIGTERM');
    await this.#exited;
  }
}
