import type { FaultOptions, RouteFamily } from './options.js';

/** What the server does to one request before (or instead of) serving it. */
export type FaultDecision =
  | { kind: 'serve'; delayMs: number }
  | { kind: 'error'; status: 500 | 503; delayMs: number }
  | { kind: 'throttle'; retryAfterSeconds: number; delayMs: number }
  | { kind: 'drop'; delayMs: number };

const SERVE_NOW: FaultDecision = { kind: 'serve', delayMs: 0 };

/** mulberry32: tiny, fast, good enough to replay fault patterns from a seed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function applies(family: RouteFamily, own: readonly RouteFamily[] | undefined, shared: readonly RouteFamily[] | undefined): boolean {
  const routes = own ?? shared ?? ['*'];
  return routes.includes('*') || routes.includes(family);
}

/**
 * Decides faults per request from a seeded PRNG. Draws happen in a fixed order for every request
 * a fault applies to, so the same seed and the same request sequence give the same faults.
 */
export class FaultInjector {
  private options: FaultOptions = {};
  private random: () => number = mulberry32(1);
  private burstRemaining = 0;
  private active = false;

  constructor(options?: FaultOptions) {
    if (options) this.set(options);
  }

  set(options: FaultOptions): void {
    this.options = { ...options };
    this.random = mulberry32(options.seed ?? 1);
    this.burstRemaining = 0;
    const o = options;
    this.active = (o.latencyMs ?? 0) > 0 || (o.latencyJitterMs ?? 0) > 0 || (o.errorRate ?? 0) > 0 || (o.dropRate ?? 0) > 0 || (o.throttle?.rate ?? 0) > 0;
  }

  /** False when no fault is configured: the server then skips classifying the request. */
  get enabled(): boolean {
    return this.active;
  }

  clear(): void {
    this.set({});
  }

  current(): FaultOptions {
    return { ...this.options };
  }

  decide(family: RouteFamily): FaultDecision {
    if (!this.active) return SERVE_NOW;
    const o = this.options;
    let delayMs = 0;
    if (applies(family, o.latencyRoutes, o.routes)) {
      delayMs = (o.latencyMs ?? 0) + (o.latencyJitterMs ? this.random() * o.latencyJitterMs : 0);
    }
    if (o.dropRate && applies(family, o.dropRoutes, o.routes) && this.random() < o.dropRate) {
      return { kind: 'drop', delayMs };
    }
    const throttle = o.throttle;
    if (throttle && throttle.rate > 0 && applies(family, throttle.routes, o.routes)) {
      if (this.burstRemaining === 0 && this.random() < throttle.rate) this.burstRemaining = throttle.burst ?? 1;
      if (this.burstRemaining > 0) {
        this.burstRemaining -= 1;
        return { kind: 'throttle', retryAfterSeconds: throttle.retryAfterSeconds ?? 1, delayMs };
      }
    }
    if (o.errorRate && applies(family, o.errorRoutes, o.routes) && this.random() < o.errorRate) {
      return { kind: 'error', status: o.errorStatus ?? 503, delayMs };
    }
    return delayMs > 0 ? { kind: 'serve', delayMs } : SERVE_NOW;
  }
}
