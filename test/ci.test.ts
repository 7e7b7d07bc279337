import { describe, expect, it } from 'vitest';
import { underCi } from './fixtures/ci.js';

describe('underCi', () => {
  it('reads CI as CI systems set it, and unset, empty, 0 or false as no', () => {
    for (const value of ['true', 'TRUE', '1', 'yes', 'github-actions']) expect(underCi({ CI: value }), value).toBe(true);
    for (const value of [undefined, '', ' ', '0', 'false', 'False']) expect(underCi(value === undefined ? {} : { CI: value }), String(value)).toBe(false);
  });
});
