/**
 * The contract every idempotency store passes, shipped so that a store of your own can run it
 * (docs/stores.md, "A store of your own"): the built-in memory, SQLite, Redis and PostgreSQL stores
 * run these same claims in this repository's tests. It uses your test runner's `describe`, `it` and
 * `afterEach` (vitest, jest and node:test have them) and node:assert, so it asks for no framework.
 *
 * ```ts
 * import { describe, it, afterEach } from 'vitest';
 * import { idempotencyStoreContract } from 'durable-worker/testing';
 * idempotencyStoreContract('my store', async ({ prefix, doneTtlMs }) => new MyStore({ prefix, doneTtlMs }), { shared: true, runner: { describe, it, afterEach } });
 * ```
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ErrorCodes, hasCode } from '../errors.js';
import { deadLetteredKey } from '../idempotency/key.js';
import type { ClaimState, IdempotencyStore } from '../idempotency/store.js';
import { failureContract, same, waitUntil, type ContractRunner } from './store-contract-failures.js';

export type { ContractRunner } from './store-contract-failures.js';

export interface MakeStoreOptions {
  /** Keys of one store never meet another prefix's (each test opens its own). */
  prefix: string;
  doneTtlMs: number;
}

export type MakeStore = (options: MakeStoreOptions) => Promise<IdempotencyStore>;

/** A server of the test's own that it may stop and start again (Redis, PostgreSQL). */
export interface PrivateServer {
  /** A store connected to this server. */
  makeStore: MakeStore;
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export interface StoreContractOptions {
  /** Two store instances see each other's keys (a second connection to one server or file). */
  shared: boolean;
  /** Starts a private server for the reconnect test; absent when the store has no server. */
  privateServer?: () => Promise<PrivateServer>;
  /** The test runner's functions. */
  runner: ContractRunner & { describe(name: string, body: () => void): void; afterEach(body: () => Promise<void>): void };
}

const DAY_MS = 86_400_000;

function keys(count: number, handler = 'orders/created'): string[] {
  return Array.from({ length: count }, (_, i) => `${handler}:evt-${i}-${randomUUID().slice(0, 8)}`);
}

export function idempotencyStoreContract(name: string, makeStore: MakeStore, options: StoreContractOptions): void {
  const { describe, it, afterEach } = options.runner;
  describe(`idempotency store contract: ${name}`, () => {
    const opened: IdempotencyStore[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });
    async function open(prefix: string = `test-${randomUUID()}`, doneTtlMs = DAY_MS): Promise<IdempotencyStore> {
      const store = await makeStore({ prefix, doneTtlMs });
      opened.push(store);
      return store;
    }

    it('claims new keys, then reports them done once marked, for any owner', async () => {
      const store = await open();
      const batch = keys(5);
      same((await store.claim(batch, 'worker-a', 30_000)).states, Array(5).fill('new'));
      await store.markDone(batch.slice(0, 3));
      same((await store.claim(batch, 'worker-b', 30_000)).states, ['done', 'done', 'done', 'busy', 'busy']);
      same((await store.claim(batch, 'worker-a', 30_000)).states, ['done', 'done', 'done', 'new', 'new']);
    });

    it('answers one state per key in order, for an empty batch and for a key repeated in a batch', async () => {
      const store = await open();
      same((await store.claim([], 'worker-a', 30_000)).states, []);
      await store.markDone([]);
      await store.release([], 'worker-a');
      const [first, second] = keys(2);
      await store.markDone([second!]);
      same((await store.claim([first!, second!, first!], 'worker-a', 30_000)).states, ['new', 'done', 'new']);
      same((await store.claim([first!], 'worker-b', 30_000)).states, ['busy']);
    });

    it('lets the same owner re-claim its own claim and refuses other owners', async () => {
      const store = await open();
      const batch = keys(3);
      await store.claim(batch, 'worker-a', 30_000);
      same((await store.claim(batch, 'worker-a', 30_000)).states, ['new', 'new', 'new']);
      same((await store.claim(batch, 'worker-b', 30_000)).states, ['busy', 'busy', 'busy']);
    });

    it("release drops only the owner's own claims and keeps done marks", async () => {
      const store = await open();
      const [claimedByA, doneKey] = keys(2);
      await store.claim([claimedByA!, doneKey!], 'worker-a', 30_000);
      await store.markDone([doneKey!]);

      await store.release([claimedByA!], 'worker-b'); // not B's claim: stays
      same((await store.claim([claimedByA!], 'worker-c', 30_000)).states, ['busy']);

      await store.release([claimedByA!, doneKey!], 'worker-a');
      same((await store.claim([claimedByA!, doneKey!], 'worker-c', 30_000)).states, ['new', 'done']);
    });

    it('a done mark replaces the claim it completes', async () => {
      const store = await open();
      const batch = keys(2);
      await store.claim(batch, 'worker-a', 30_000);
      await store.markDone(batch);
      await store.release(batch, 'worker-a');
      same((await store.claim(batch, 'worker-a', 30_000)).states, ['done', 'done']);
    });

    it('markDeadLettered marks a key done and dead-lettered together, and leaves a key applied meanwhile as it is', async () => {
      const store = await open();
      assert.equal(typeof store.markDeadLettered, 'function');
      if (store.markDeadLettered === undefined) return;
      await store.claim(['h:dead', 'h:applied'], 'worker-a', 60_000);
      await store.markDone(['h:applied']);
      await store.markDeadLettered(['h:dead', 'h:applied']);
      const states = (await store.claim(['h:dead', deadLetteredKey('h:dead'), 'h:applied', deadLetteredKey('h:applied')], 'worker-b', 60_000)).states;
      same(states, ['done', 'done', 'done', 'new']);
    });

    it('gives each key to exactly one of two racing claimants', async () => {
      const prefix = `test-${randomUUID()}`;
      const first = await open(prefix);
      const second = options.shared ? await open(prefix) : first;
      const batch = keys(50);
      // Overlapping batches in opposite orders: the worst case for row locks.
      const reversed = [...batch].reverse();
      const rounds = (
        await Promise.all([
          first.claim(batch, 'worker-a', 30_000),
          second.claim(reversed, 'worker-b', 30_000),
          first.claim(batch, 'worker-c', 30_000),
          second.claim(reversed, 'worker-d', 30_000),
        ])
      ).map((result) => result.states);
      const byKey = (round: ClaimState[], reversedOrder: boolean, i: number) => (reversedOrder ? round[batch.length - 1 - i] : round[i]);
      for (let i = 0; i < batch.length; i++) {
        const states = rounds.map((round, r) => byKey(round, r % 2 === 1, i));
        assert.equal(states.filter((state) => state === 'new').length, 1, `key ${i}: ${states.join(',')}`);
        assert.equal(states.filter((state) => state === 'busy')?.length, 3);
      }
    });

    it('lets another owner take over a claim once it expires', async () => {
      const store = await open();
      const batch = keys(3);
      same((await store.claim(batch, 'worker-a', 300)).states, ['new', 'new', 'new']);
      same((await store.claim(batch, 'worker-b', 30_000)).states, ['busy', 'busy', 'busy']);
      let states: ClaimState[] = [];
      await waitUntil(
        'the expired claim to be taken over',
        async () => {
          states = (await store.claim(batch, 'worker-b', 30_000)).states;
          return states.every((state) => state === 'new');
        },
        10_000,
      );
      // B holds it now: A's late re-claim is refused.
      same((await store.claim(batch, 'worker-a', 300)).states, ['busy', 'busy', 'busy']);
    });

    it('forgets done marks after the done TTL', async () => {
      const store = await open(`test-${randomUUID()}`, 400);
      const batch = keys(2);
      await store.markDone(batch);
      same((await store.claim(batch, 'worker-a', 30_000)).states, ['done', 'done']);
      await waitUntil('the done marks to expire', async () => (await store.claim(batch, 'worker-a', 30_000)).states.every((s) => s === 'new'), 10_000);
    });

    it("isolates prefixes: stores with different prefixes never see each other's keys", async () => {
      const leftPrefix = `test-${randomUUID()}`;
      const left = await open(leftPrefix);
      const right = await open(`test-${randomUUID()}`);
      const batch = keys(3, 'orders/created');
      await left.markDone(batch);
      const claimedByLeft = keys(1);
      await left.claim(claimedByLeft, 'worker-a', 30_000);
      same((await right.claim([...batch, ...claimedByLeft], 'worker-b', 30_000)).states, ['new', 'new', 'new', 'new']);
      // Prefix `P:orders/created` + key `evt-1` must not meet prefix `P` + key `orders/created:evt-1`,
      // which naive `prefix:key` concatenation would make the same string.
      const tricky = await open(`${leftPrefix}:orders/created`);
      const trickyKeys = batch.map((key) => key.slice('orders/created:'.length));
      same((await tricky.claim(trickyKeys, 'worker-b', 30_000)).states, ['new', 'new', 'new']);
      same((await left.claim(batch, 'worker-b', 30_000)).states, ['done', 'done', 'done']);
    });

    it('close is idempotent and later operations reject with DW_ERR_STORE', async () => {
      const store = await makeStore({ prefix: `test-${randomUUID()}`, doneTtlMs: DAY_MS });
      await store.claim(keys(1), 'worker-a', 30_000);
      await store.close();
      await store.close();
      const failure = await store.claim(keys(1), 'worker-a', 30_000).then(
        () => undefined,
        (err: unknown) => err,
      );
      assert.ok(hasCode(failure, ErrorCodes.STORE));
    });

    failureContract({ open, shared: options.shared, it });

    if (options.privateServer !== undefined) {
      const startServer = options.privateServer;
      it('rejects quickly with DW_ERR_STORE while the server is down, then works again once it is back', async () => {
        const server = await startServer();
        try {
          const store = await server.makeStore({ prefix: `test-${randomUUID()}`, doneTtlMs: DAY_MS });
          opened.push(store);
          const batch = keys(3);
          same((await store.claim(batch, 'worker-a', 30_000)).states, ['new', 'new', 'new']);

          await server.stop();
          let failure: unknown;
          // Rejected while the server is still down (it restarts only after): an operation must not sit
          // in a queue until the server is back.
          await waitUntil(
            'an operation to fail while the server is down',
            async () => {
              failure = await store.markDone(batch).then(
                () => undefined,
                (err: unknown) => err,
              );
              return failure !== undefined;
            },
            10_000,
          );
          assert.ok(hasCode(failure, ErrorCodes.STORE), String(failure));
          assert.doesNotMatch((failure as Error).message, /:[^/@\s]+@/); // no password in the message

          await server.start();
          let states: ClaimState[] = [];
          await waitUntil(
            'the store to recover after the server restarted',
            async () => {
              states = await store.claim(keys(2), 'worker-a', 30_000).then(
                (result) => result.states,
                () => [],
              );
              return states.length === 2;
            },
            20_000,
          );
          same(states, ['new', 'new']);
          await store.markDone(batch);
          same((await store.claim(batch, 'worker-b', 30_000)).states, ['done', 'done', 'done']);
        } finally {
          await server.dispose();
        }
      }, 60_000);
    }
  });
}
