import type { OperationSpec } from '../openapi/operation.js';

/**
 * A seam for tests: every answer the emulator writes, seen once it is written. The test suite
 * installs one (test/setup/emulator-responses.ts) that checks each answer against the emulator's
 * OpenAPI description, so every test that talks to an emulator also checks the description.
 *
 * Kept on `globalThis` under a registered symbol: the source tree and the built `dist/` copy of the
 * emulator, loaded side by side in one test process, see the same observer. Unset (production),
 * the cost is one property read per answer.
 */
export interface EmulatorExchange {
  method: string;
  /** The path as received, without the query string. */
  path: string;
  /** The operation that answered; undefined when no route matched (404) or the method did not (405). */
  operation: OperationSpec | undefined;
  status: number;
  /** Header names in lowercase. */
  headers: Record<string, string>;
  /** The entity as JSON text, before any content coding; undefined without a body. */
  body: string | undefined;
}

export type ExchangeObserver = (exchange: EmulatorExchange) => void;

const OBSERVER = Symbol.for('durable-worker.emulator.exchange-observer');

type Holder = { [OBSERVER]?: ExchangeObserver };

export function setExchangeObserver(observer: ExchangeObserver | undefined): void {
  (globalThis as Holder)[OBSERVER] = observer;
}

export function exchangeObserver(): ExchangeObserver | undefined {
  return (globalThis as Holder)[OBSERVER];
}
