/**
 * A SIGTERM or SIGINT that arrives while the CLI is still loading its modules (a few hundred ms
 * before a command installs its two-phase handlers) would kill the process with the signal's
 * default action: exit by signal, not the status docs/operations.md promises for a shutdown. Nothing has
 * started then, so there is nothing to drain: exit 0, as a drain would. The bin installs this before
 * it loads the CLI; `onShutdownSignals` takes over from it. Dependency-free, so it loads in no time.
 */
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

const exitBeforeStart = (): void => {
  process.exit(0);
};

export function holdEarlySignals(): void {
  for (const signal of SIGNALS) process.on(signal, exitBeforeStart);
}

export function releaseEarlySignals(): void {
  for (const signal of SIGNALS) process.off(signal, exitBeforeStart);
}
