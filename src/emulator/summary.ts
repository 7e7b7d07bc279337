import type { SourcesSummary } from './sources/index.js';
import type { Tenants } from './tenants.js';
import type { FaultOptions } from './faults/options.js';
import type { HeldLease } from './consumers/durable-consumer.js';

/** One durable consumer as `GET /_emulator/state` shows it. Sequences are decimal strings. */
export interface ConsumerStateSummary {
  id: string;
  paused: boolean;
  /** Newest sequence of the tenant stream; null while it is empty. */
  head: string | null;
  /** Sequence of the last committed event; null before the first commit. */
  committed: string | null;
  /** Events leased to workers right now. */
  leased: number;
  /** Events of expired or failed batches waiting for redelivery. */
  pendingRedelivery: number;
  /** The stream head when the consumer was created (it never hands out earlier events). */
  startedAfter: string;
  /** The leases held right now: by which workerId, until when. */
  leases: HeldLease[];
}

export interface TenantStateSummary {
  id: string;
  head: string | null;
  /** Events still held in memory (events every consumer committed are trimmed). */
  retainedEvents: number;
  sources: SourcesSummary['sources'];
  destinations: Array<{ id: string; type: string; paused: boolean }>;
  consumers: ConsumerStateSummary[];
}

/** `GET /_emulator/state` and `RunningEmulator.state()`. */
export interface EmulatorStateSummary {
  tenants: TenantStateSummary[];
  faults: FaultOptions;
}

export function summarizeState(tenants: Tenants, sources: (tenant: string) => SourcesSummary, faults: FaultOptions, nowMs = Date.now()): EmulatorStateSummary {
  const out: TenantStateSummary[] = [];
  for (const tenant of tenants.all()) {
    const head = tenant.stream.head > 0 ? String(tenant.stream.head) : null;
    const destinations: TenantStateSummary['destinations'] = [];
    const consumers: ConsumerStateSummary[] = [];
    for (const destination of tenant.destinations.values()) {
      destinations.push({ id: destination.id, type: destination.type, paused: destination.paused });
      if (destination.consumer === undefined) continue;
      const summary = destination.consumer.summary(nowMs);
      consumers.push({
        id: destination.id,
        paused: summary.paused,
        head,
        committed: summary.committed,
        leased: summary.leased,
        pendingRedelivery: summary.pendingRedelivery,
        startedAfter: summary.startedAfter,
        leases: summary.leases,
      });
    }
    out.push({ id: tenant.id, head, retainedEvents: tenant.stream.retained, sources: sources(tenant.id).sources, destinations, consumers });
  }
  return { tenants: out, faults };
}
