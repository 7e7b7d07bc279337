import type { Clock } from '../runtime/clock.js';
import { FlowModel, type FlowLimits } from './flow-model.js';
import type { HeldLease } from './held-lease.js';
import type { LeaseContext } from './lease-view.js';
import type { InFlightCounter } from './in-flight.js';
import { LeaseGauge } from './lease-gauge.js';
import { PullController } from './pull-controller.js';
import type { PullControllerOptions } from './pull-options.js';
import { Scheduler, type SchedulerListener } from './scheduler.js';
import { WorkerIdPool } from './worker-ids.js';

export interface WorkerFlowOptions extends Omit<PullControllerOptions, 'ids' | 'model' | 'scheduler' | 'leaseContext' | 'events'> {
  leaseContext: LeaseContext;
  workerIdPrefix: string;
  limits: FlowLimits;
  inFlight: InFlightCounter;
}

/**
 * The flow control of one worker process, wired together (docs/architecture.md, "Flow control"):
 * the pool of workerIds, the flow model, the scheduler of held leases and the pull controller. The
 * scheduler tells the controller when events start and leases leave; the controller asks the model.
 */
export class WorkerFlow implements SchedulerListener {
  readonly ids: WorkerIdPool;
  readonly model: FlowModel;
  readonly scheduler: Scheduler;
  readonly controller: PullController;
  readonly #gauge: LeaseGauge;
  readonly #clock: Clock;

  constructor(options: WorkerFlowOptions) {
    const events = options.leaseContext.events;
    this.#clock = options.clock;
    this.ids = new WorkerIdPool(options.workerIdPrefix, options.limits.maxLeases);
    this.model = new FlowModel(options.limits);
    this.#gauge = new LeaseGauge(events);
    this.scheduler = new Scheduler({ maxInProgress: options.limits.maxInProgress, inFlight: options.inFlight, listener: this, clock: options.clock });
    this.controller = new PullController({ ...options, events, ids: this.ids, model: this.model, scheduler: this.scheduler });
  }

  /** Starts pulling. */
  start(): void {
    this.controller.maybePull();
  }

  eventsStarted(count: number): void {
    this.model.eventsStarted(count, this.#clock.now());
    this.#report();
    this.controller.maybePull();
  }

  leaseArrived(): void {
    this.#report();
  }

  leaseLeaving(lease: HeldLease, phase: 'sending' | 'answered' | 'unanswered'): void {
    if (phase !== 'sending') {
      this.ids.release(lease.slot);
      this.#report();
      this.controller.ackAnswered();
    } else this.controller.maybePull();
  }

  /** Stops pulling and requeues what has not started; resolves once no pull is on its way and no lease is held. */
  async drain(): Promise<void> {
    this.scheduler.drain();
    await this.controller.stop();
    await this.scheduler.whenEmpty();
  }

  #report(): void {
    this.#gauge.set(this.scheduler.held, this.scheduler.queued);
  }
}
