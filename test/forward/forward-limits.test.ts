import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/errors.js';
import { forwardLimits, parseForwardRate } from '../../src/forward/forward-limits.js';
import { createForwardingHandler } from '../../src/forward/forwarding-handler.js';
import { toLoadedHandler } from '../../src/handlers/loader.js';
import type { CloudEvent } from '../../src/types.js';
import { contextFor } from './handler-context.js';

describe('--forward-rate and --forward-concurrency', () => {
  it('reads MAX/PER, adaptive and adaptive:MAX/PER; refuses the rest', () => {
    expect(parseForwardRate('40/1s')).toEqual({ rate: { max: 40, per: 1_000 }, adaptive: false });
    expect(parseForwardRate('600/m')).toEqual({ rate: { max: 600, per: 60_000 }, adaptive: false });
    expect(parseForwardRate('adaptive')).toEqual({ adaptive: true });
    expect(parseForwardRate('adaptive:100/500ms')).toEqual({ rate: { max: 100, per: 500 }, adaptive: true });
    for (const bad of ['40', '0/1s', '40/', '40/soon', '40/1', 'fast']) expect(parseForwardRate(bad), bad).toBeUndefined();
  });

  it('become the forwarding handler limits, validated like a handler module', () => {
    expect(forwardLimits({})).toBeUndefined();
    const handler = createForwardingHandler({ url: 'http://127.0.0.1:9/events', rate: 'adaptive:40/1s', concurrency: 4 });
    expect(toLoadedHandler('@forward', '(built-in)', handler).limits).toEqual({ adaptive: true, rate: { max: 40, perMs: 1_000 }, concurrency: 4 });
  });
});

describe('the forwarding handler hears "too many" with a time to come back', () => {
  let url = '';
  let status = 429;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, status === 200 ? {} : { 'retry-after': '1' });
      res.end();
    });
  });
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('429 and 503 with Retry-After are a RetryLaterError with its wait (what lowers an adaptive rate)', async () => {
    const event = { specversion: '1.0', id: 'e1', type: 't', subject: 's', sequence: '1', source: '/s', data: {} } as CloudEvent;
    const handler = createForwardingHandler({ url });
    for (const code of [429, 503]) {
      status = code;
      const err = (await Promise.resolve(handler.handle(event as never, contextFor() as never)).catch((e: unknown) => e)) as {
        code?: string;
        retryAfterMs?: number;
      };
      expect(err.code).toBe(ErrorCodes.RETRY_LATER);
      expect(err.retryAfterMs).toBe(1_000);
    }
  });
});
