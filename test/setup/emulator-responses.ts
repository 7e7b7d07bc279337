import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { setExchangeObserver, type EmulatorExchange } from '../../src/emulator/http/exchange-observer.js';

/**
 * Vitest setup file (vitest.config.ts `setupFiles`): every answer an emulator in this test process
 * writes is checked against the OpenAPI description of its route (response-validator.ts), and a
 * test that received an answer its description does not allow fails, with a message naming the
 * route and the field. The source tree's emulator and the built one in `dist/` both report here
 * (the observer lives on `globalThis`).
 *
 * Cheap when unused: the validator (and the emulator's document) loads at the first answer.
 * Answers are checked as they come, off the request path, so nothing piles up in memory.
 *
 * Emulators in child processes (the CLI's `emulator` and `dev`) report too: every Node process
 * started from here loads child-exchanges.mjs (NODE_OPTIONS), which appends their answers to a file
 * read after each test.
 */

const CHILD_EXCHANGES = join(tmpdir(), `dw-emulator-exchanges-${process.pid}.jsonl`);
process.env.DW_TEST_EMULATOR_EXCHANGES = CHILD_EXCHANGES;
const childHook = new URL('./child-exchanges.mjs', import.meta.url).href;
if (!(process.env.NODE_OPTIONS ?? '').includes(childHook)) process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import ${childHook}`.trim();

/** What child processes reported since the last look (the file is moved aside first, so no line is lost). */
function childExchanges(): Array<Omit<EmulatorExchange, 'operation'> & { operationId?: string }> {
  if (!existsSync(CHILD_EXCHANGES)) return [];
  const taken = `${CHILD_EXCHANGES}.${Date.now()}`;
  renameSync(CHILD_EXCHANGES, taken);
  const lines = readFileSync(taken, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  rmSync(taken, { force: true });
  return lines.map((line) => JSON.parse(line) as Omit<EmulatorExchange, 'operation'> & { operationId?: string });
}

let pending: EmulatorExchange[] = [];
let violations: string[] = [];
let draining: Promise<void> | undefined;
let validator: Promise<import('./response-validator.js').ResponseValidator> | undefined;

async function drain(): Promise<void> {
  validator ??= import('./response-validator.js').then(({ ResponseValidator }) => new ResponseValidator());
  const checker = await validator;
  while (pending.length > 0) {
    const batch = pending;
    pending = [];
    for (const exchange of batch) {
      const violation = checker.check(exchange);
      if (violation !== undefined) violations.push(violation);
    }
    // Let the servers answer in between.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

setExchangeObserver((exchange) => {
  pending.push(exchange);
  draining ??= drain().finally(() => {
    draining = undefined;
    if (pending.length > 0) draining = drain();
  });
});

let childAnswersChecked = 0;

/** How many answers of emulators in child processes were checked so far. For the hook's own test. */
export function childAnswersCheckedCount(): number {
  return childAnswersChecked;
}

/** The answers seen so far that do not match their description (and forgets them). For the hook's own test. */
export async function takeResponseViolations(): Promise<string[]> {
  const reported = childExchanges();
  if (reported.length > 0) {
    validator ??= import('./response-validator.js').then(({ ResponseValidator }) => new ResponseValidator());
    const checker = await validator;
    childAnswersChecked += reported.length;
    for (const exchange of reported) {
      const violation = checker.checkReported(exchange);
      if (violation !== undefined) violations.push(violation);
    }
  }
  while (draining) await draining;
  const out = violations;
  violations = [];
  return out;
}

async function failOnViolations(): Promise<void> {
  const found = await takeResponseViolations();
  if (found.length > 0) {
    const shown = found.slice(0, 10).join('\n');
    throw new Error(`${found.length} emulator answer(s) do not match the OpenAPI description of their route:\n${shown}${found.length > 10 ? '\n...' : ''}`);
  }
}

afterEach(failOnViolations);
afterAll(async () => {
  await failOnViolations();
  rmSync(CHILD_EXCHANGES, { force: true });
});
