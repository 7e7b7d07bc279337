/** The platform emulator's public face (used by the CLI, tests and benchmarks). */
export { startEmulator } from './start.js';
export type { EmulatorOptions, RunningEmulator } from './start.js';
export { loadEmulatorConfig, parseEmulatorConfig, emulatorConfigSchema, ALL_SCOPES, DEV_DEFAULTS } from './config.js';
export type { EmulatorConfig, ResolvedEmulatorConfig, Scope } from './config.js';
export type { FaultOptions, RouteFamily } from './faults/options.js';
export type { EmulatorStateSummary, TenantStateSummary, ConsumerStateSummary } from './summary.js';
export type { EmulatorContext, NewEvent, Principal } from './context.js';
export { MAX_IN_FLIGHT_EVENTS } from './consumers/durable-consumer.js';
