import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/idempotency/key.js';

describe('idempotencyKey', () => {
  it('is <handler name>:<event id>, whatever the handler name holds', () => {
    expect(idempotencyKey('orders/created', '7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f')).toBe('orders/created:7f3c9a2e-1b4d-4c8e-9f10-2a3b4c5d6e7f');
    expect(idempotencyKey('a:b', 'c')).toBe('a:b:c');
    expect(idempotencyKey('ünïcode/händler', 'id-1')).toBe('ünïcode/händler:id-1');
  });
});
