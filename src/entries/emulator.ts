/** `durable-worker/emulator`: the platform emulator, for offline development and tests (docs/api.md). */
export { startEmulator } from '../lazy-entry-points.js';
export type { EmulatorOptions, RunningEmulator, EmulatorConfig, FaultOptions } from '../emulator/index.js';
