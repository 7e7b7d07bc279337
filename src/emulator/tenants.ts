import type { CloudEvent } from '../types.js';
import type { DestinationType } from './config.js';
import type { NewEvent } from './context.js';
import { DurableConsumer } from './consumers/durable-consumer.js';
import { EventStream } from './events/stream.js';

/** An event destination of a tenant. Only durable consumers hold a lease state. */
export interface Destination {
  id: string;
  type: DestinationType;
  /** Set by pause/resume; a paused durable consumer answers pulls with 409. */
  paused: boolean;
  consumer: DurableConsumer | undefined;
}

/** A tenant: its event stream and its event destinations. */
export class Tenant {
  readonly stream: EventStream;
  readonly destinations = new Map<string, Destination>();

  constructor(readonly id: string) {
    this.stream = new EventStream(id);
  }

  /** Returns undefined when the id is taken. A durable consumer starts at the stream's head. */
  addDestination(id: string, type: DestinationType): Destination | undefined {
    if (this.destinations.has(id)) return undefined;
    const destination: Destination = { id, type, paused: false, consumer: type === 'DURABLE_CONSUMER' ? new DurableConsumer(this.stream) : undefined };
    this.destinations.set(id, destination);
    return destination;
  }

  append(events: readonly NewEvent[]): CloudEvent[] {
    const appended = this.stream.append(events);
    // A tenant without a durable consumer keeps no history: a consumer created later starts at the head.
    if (!this.hasConsumer()) this.stream.trimThrough(this.stream.head);
    return appended;
  }

  /** Drops events every durable consumer has committed (nothing can hand them out again). */
  trim(): void {
    let lowest = this.stream.head;
    for (const destination of this.destinations.values()) {
      if (destination.consumer !== undefined) lowest = Math.min(lowest, destination.consumer.committedSequence);
    }
    this.stream.trimThrough(lowest);
  }

  private hasConsumer(): boolean {
    for (const destination of this.destinations.values()) if (destination.consumer !== undefined) return true;
    return false;
  }
}

/** Every tenant of the emulator, created on first reference (config, seeding, applications). */
export class Tenants {
  private readonly byId = new Map<string, Tenant>();

  get(id: string): Tenant | undefined {
    return this.byId.get(id);
  }

  ensure(id: string): Tenant {
    let tenant = this.byId.get(id);
    if (tenant === undefined) {
      tenant = new Tenant(id);
      this.byId.set(id, tenant);
    }
    return tenant;
  }

  all(): IterableIterator<Tenant> {
    return this.byId.values();
  }
}
