// Loaded by every Node process the test suite starts (NODE_OPTIONS=--import, set by
// test/setup/emulator-responses.ts): an emulator running in such a process (`durable-worker
// emulator`, `dev`) appends each answer it writes to a file the test process checks against the
// OpenAPI description. Elsewhere it only sets a function nobody calls.
import { appendFileSync } from 'node:fs';

const file = process.env.DW_TEST_EMULATOR_EXCHANGES;
if (file) {
  globalThis[Symbol.for('durable-worker.emulator.exchange-observer')] = (exchange) => {
    const { method, path, operation, status, headers, body } = exchange;
    const line = JSON.stringify({ method, path, operationId: operation?.operationId, status, headers, body });
    try {
      appendFileSync(file, `${line}\n`);
    } catch {
      // The test process is gone (its temporary folder with it): nothing left to check against.
    }
  };
}
