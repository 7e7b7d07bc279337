import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { tokenFor } from '../emulator/helpers.js';
import { authHeaders, bodyOf, contentHeaders, FUZZ_SEED, segment, sendAll, violations, type FuzzRequest } from './fuzz-http.js';

/**
 * Generated requests against the emulator's ingest and pull/ack endpoints (seeded: FUZZ_SEED
 * replays): never a 5xx, never a dropped connection, every error a problem+json with its status,
 * no unexpected error logged, and the emulator still serves afterwards.
 */
const PER_FAMILY = 10_000;

let emulator: RunningEmulator;
let token: string;
const logged: string[] = [];

beforeAll(async () => {
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
  emulator = await startEmulator({ port: 0, logger, maxBodyBytes: 256 * 1024 });
  const answer = await tokenFor(emulator.url);
  token = answer.body.access_token;
});
afterAll(async () => {
  await emulator?.close();
});

const anyValue = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.double(),
  fc.bigInt().map(String),
  fc.constantFrom(9007199254740993, -0, 1e308, '', 'x'.repeat(10_000)),
);

/** Typed-ingest-like bodies: usually the right skeleton with wrong or odd parts. */
const ingestBody = fc.oneof(
  fc.record(
    {
      entries: fc.oneof(
        fc.array(
          fc.record(
            {
              id: fc.oneof(fc.string({ maxLength: 30 }), anyValue),
              properties: fc.oneof(
                fc.array(
                  fc.record(
                    {
                      id: fc.oneof(fc.constantFrom('name', 'price', 'tags', 'id', '$type', 'Name'), fc.string({ maxLength: 20 }), anyValue),
                      value: anyValue,
                      language: fc.oneof(fc.constantFrom('en', 'de-CH', ''), anyValue),
                    },
                    { requiredKeys: ['id'] },
                  ),
                  { maxLength: 6 },
                ),
                anyValue,
              ),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 5 },
        ),
        anyValue,
      ),
    },
    { requiredKeys: [] },
  ),
  anyValue,
);

const legacyBody = fc.record(
  { entries: fc.oneof(fc.array(fc.dictionary(fc.string({ maxLength: 10 }), anyValue, { maxKeys: 5 }), { maxLength: 4 }), anyValue) },
  { requiredKeys: [] },
);

function ingestRequests(): FuzzRequest[] {
  const arb = fc.record({
    kind: fc.constantFrom('typed', 'typed', 'typed', 'verify', 'import'),
    source: segment,
    auth: authHeaders(token),
    content: contentHeaders,
    typed: bodyOf(ingestBody),
    legacy: bodyOf(legacyBody),
  });
  return fc.sample(arb, { seed: FUZZ_SEED, numRuns: PER_FAMILY }).map((r) => ({
    method: 'POST' as const,
    path: r.kind === 'typed' ? `/sources/${r.source}` : `/datasources/${r.source}/import${r.kind === 'verify' ? '/verify' : ''}`,
    headers: { ...r.content, ...r.auth },
    ...(() => {
      const body = r.kind === 'typed' ? r.typed : r.legacy;
      return body === undefined ? {} : { body };
    })(),
  }));
}

const queryValue = fc.oneof(
  fc.integer({ min: -5, max: 700 }).map(String),
  fc.constantFrom('', '1.5', '1e2', '0x10', ' 5', '+7', '-0', '99999999999999999999', 'NaN', 'abc'),
  fc.string({ maxLength: 20 }),
);

function pullAckRequests(): FuzzRequest[] {
  const query = fc.array(fc.tuple(fc.constantFrom('limit', 'visibility', 'visibility', 'workerId', 'workerId', 'visibilitySeconds', ''), queryValue), {
    maxLength: 5,
  });
  const ack = fc.record(
    {
      leaseId: fc.oneof(fc.string({ maxLength: 40 }), anyValue, fc.constant('x'.repeat(300))),
      generation: fc.oneof(fc.integer({ min: -2, max: 5 }), anyValue),
      status: fc.oneof(fc.constantFrom('ok', 'failed', 'OK', 'stale', ''), anyValue),
    },
    { requiredKeys: [] },
  );
  const arb = fc.record({
    kind: fc.constantFrom('pull', 'pull', 'ack', 'ack', 'pause', 'resume'),
    destination: fc.oneof(
      { weight: 6, arbitrary: fc.constant('dev-consumer') },
      { weight: 1, arbitrary: fc.constant('dev-webhook') },
      { weight: 2, arbitrary: segment },
    ),
    query,
    auth: authHeaders(token),
    content: contentHeaders,
    body: bodyOf(ack),
  });
  return fc.sample(arb, { seed: FUZZ_SEED + 1, numRuns: PER_FAMILY }).map((r) => {
    const qs = new URLSearchParams(r.query).toString();
    const path = `/v1/event-destinations/${r.destination}/${r.kind === 'ack' ? 'acknowledge' : r.kind}${r.kind === 'pull' && qs ? `?${qs}` : ''}`;
    const withBody = r.kind === 'ack' || r.body === '{}';
    return { method: 'POST' as const, path, headers: { ...r.content, ...r.auth }, ...(withBody && r.body !== undefined ? { body: r.body } : {}) };
  });
}

function histogram(answers: ReadonlyArray<{ status: number }>): string {
  const counts = new Map<number, number>();
  for (const a of answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status} x${n}`)
    .join(', ');
}

describe(`fuzzing the emulator (seed ${FUZZ_SEED}, ${PER_FAMILY} requests per family)`, () => {
  it('ingest (typed and legacy): no 5xx, every error problem+json', async () => {
    const requests = ingestRequests();
    const answers = await sendAll(emulator.url, requests);
    expect(violations(answers)).toEqual([]);
    // The fuzz reached the validators and past them, not only the auth check.
    const statuses = new Set(answers.map((a) => a.status));
    console.info(`ingest: ${histogram(answers)}`);
    expect(statuses).toContain(400);
    expect(statuses).toContain(202);
    expect(statuses).toContain(401);
  }, 120_000);

  it('pull, acknowledge, pause, resume: no 5xx, every error problem+json', async () => {
    // Events to lease, so pulls reach the lease path (and the in-flight window fills: 429).
    emulator.appendEvents(
      'dev-tenant',
      Array.from({ length: 2_000 }, (_, i) => ({ type: 'fuzz.event', subject: `s-${i % 37}`, data: { i } })),
    );
    const requests = pullAckRequests();
    const answers = await sendAll(emulator.url, requests);
    expect(violations(answers)).toEqual([]);
    const statuses = new Set(answers.map((a) => a.status));
    console.info(`pull/ack: ${histogram(answers)}`);
    for (const status of [200, 400, 401, 404]) expect(statuses).toContain(status);
  }, 120_000);

  it('logged no unexpected error and still serves a normal pull and ack', async () => {
    await fetch(`${emulator.url}/v1/event-destinations/dev-consumer/resume`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    emulator.appendEvents('dev-tenant', [{ type: 'fuzz.event', subject: 'after', data: {} }]);
    const pull = await fetch(`${emulator.url}/v1/event-destinations/dev-consumer/pull?workerId=after-fuzz&limit=1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    expect([200, 429]).toContain(pull.status);
    expect(logged.filter((line) => /"level":50/.test(line))).toEqual([]);
  });
});
