import type { LeaseView } from './lease-view.js';

/** What the warning reads of a lease. */
type WarnedLease = LeaseView & { readonly pulledAtMs: number; readonly settledEvents: number; readonly events: readonly unknown[] };

/** A lease used more than this fraction of its visibility: warn (rate-limited) and emit lease:near-deadline. */
export const NEAR_DEADLINE_FRACTION = 0.8;

/** A lease cut at its deadline, or one that used most of its lease, will soon lose leases: say which knob to turn. */
export function warnNearDeadline(lease: WarnedLease, hitDeadline: boolean): void {
  const { context } = lease;
  const visibilityMs = context.visibilitySeconds * 1_000;
  const usedFraction = (context.clock.now() - lease.pulledAtMs) / visibilityMs;
  if (!hitDeadline && usedFraction <= NEAR_DEADLINE_FRACTION) return;
  context.events.emit('lease:near-deadline', { workerId: lease.workerId, leaseId: lease.pulled.leaseId, usedFraction });
  if (!context.nearDeadlineWarnings.allow(lease.workerId, context.clock.now())) return;
  const total = lease.events.length;
  const what = hitDeadline
    ? `lease deadline reached with ${total - lease.settledEvents} of ${total} events unfinished (requeued)`
    : `lease used ${Math.round(usedFraction * 100)} % of its time`;
  lease.log.warn(
    { usedFraction: Math.round(usedFraction * 100) / 100, visibilitySeconds: context.visibilitySeconds, events: total },
    `${what}: raise --visibility, or lower --limit, or raise --max-in-progress`,
  );
}
