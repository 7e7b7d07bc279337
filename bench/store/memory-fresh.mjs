/**
 * What the memory store costs a fresh process, before V8 has optimised it: each measurement is a new
 * Node process that claims and marks done 20,000 fresh keys in batches of 100 (as a worker does with
 * a burst of events), timed on its main thread. Beside the store as built (dist/, in typed arrays),
 * a reference store on a `Map` with the same answers, the layout src/runtime/lru-table.ts says why
 * it does not use. The two kinds
 * alternate, so that both meet the same minutes of a shared machine.
 *
 *   npm run build && node bench/store/memory-fresh.mjs [--processes 10] [--keys 20000]
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const KINDS = ['typed-arrays', 'map'];

const { values } = parseArgs({
  options: { processes: { type: 'string', default: '10' }, keys: { type: 'string', default: '20000' }, child: { type: 'string' } },
});
const keyCount = Number(values.keys);

async function measure(kind) {
  const { idempotencyKey } = await import('../../dist/idempotency/key.js');
  const store = kind === 'map' ? new MapStore() : new (await import('../../dist/idempotency/memory.js')).MemoryIdempotencyStore({ doneTtlMs: 86_400_000 });
  const ids = Array.from({ length: keyCount }, () => randomUUID());
  // The main thread's own CPU where Node has it (23.9 and later), else the whole process's (V8's helpers included).
  const cpuUsage = process.threadCpuUsage?.bind(process) ?? process.cpuUsage.bind(process);
  const startCpu = cpuUsage();
  for (let at = 0; at < keyCount; at += 100) {
    const keys = ids.slice(at, at + 100).map((id) => idempotencyKey('work', id));
    const { states } = await store.claim(keys, 'bench', 60_000);
    if (states.some((state) => state !== 'new')) throw new Error('a fresh key was not new');
    await store.markDone(keys);
  }
  const cpu = cpuUsage(startCpu);
  return { kind, cpuUsPerKey: (cpu.user + cpu.system) / keyCount };
}

/** The reference: one record object per key in a `Map`, least recently used first (re-inserted on use). */
class MapStore {
  #records = new Map();
  #maxEntries = 100_000;

  async claim(keys, owner, claimTtlMs) {
    const now = Date.now();
    const states = keys.map((key) => {
      let record = this.#records.get(key);
      if (record !== undefined && record.expiresAtMs <= now) {
        this.#records.delete(key);
        record = undefined;
      }
      if (record === undefined) {
        this.#records.set(key, { done: false, owner, expiresAtMs: now + claimTtlMs });
        if (this.#records.size > this.#maxEntries) this.#records.delete(this.#records.keys().next().value);
        return 'new';
      }
      this.#records.delete(key);
      this.#records.set(key, record);
      if (record.done) return 'done';
      if (record.owner !== owner) return 'busy';
      record.expiresAtMs = now + claimTtlMs;
      return 'new';
    });
    return { states, failures: undefined };
  }

  async markDone(keys) {
    const expiresAtMs = Date.now() + 86_400_000;
    for (const key of keys) {
      const record = this.#records.get(key);
      if (record === undefined) this.#records.set(key, { done: true, owner: '', expiresAtMs });
      else Object.assign(record, { done: true, owner: '', expiresAtMs });
    }
  }
}

// Last: the class above must be initialised before a child measures with it.
if (values.child !== undefined) {
  console.log(JSON.stringify(await measure(values.child)));
} else {
  const perKind = Object.fromEntries(KINDS.map((kind) => [kind, []]));
  for (let i = 0; i < Number(values.processes); i++) {
    for (const kind of KINDS) {
      const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', kind, '--keys', String(keyCount)], { encoding: 'utf8' });
      perKind[kind].push(JSON.parse(out).cpuUsPerKey);
    }
  }
  for (const kind of KINDS) {
    const sorted = [...perKind[kind]].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)];
    console.log(
      `${kind}: CPU per key (claim + mark done; the main thread on Node 23.9 and later), fresh process: median ${median.toFixed(2)} µs, ${sorted[0].toFixed(2)}–${sorted.at(-1).toFixed(2)} over ${sorted.length} processes`,
    );
  }
}
