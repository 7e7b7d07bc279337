/**
 * Defaults of the retry backoff and the circuit breakers, shared by the config schema and the
 * worker (for configs built by hand). docs/handlers.md, "Failures and retries", says why these.
 */
export const RETRY_DEFAULTS = { retryBackoffMinMs: 1_000, retryBackoffMaxMs: 60_000 } as const;
export const BREAKER_DEFAULTS = { breaker: true, breakerFailureRatio: 0.5, breakerWindow: 20, breakerWindowTimeMs: 10_000, breakerCooldownMs: 3_000 } as const;
