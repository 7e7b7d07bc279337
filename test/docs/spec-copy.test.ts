import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-commands.js';
import { underCi } from '../fixtures/ci.js';

/**
 * The spec travels with the project: docs/platform-api.md is the API description the emulator
 * implements, identical to the shared one the project is built against (`../shared/spec/`, beside
 * the checkout in development and CI; absent from a user's clone).
 */
const COPY = join(ROOT, 'docs', 'platform-api.md');
const SHARED = join(ROOT, '..', 'shared', 'spec', 'platform-api.md');

describe('docs/platform-api.md', () => {
  it('is the shared spec, byte for byte, when the shared copy is beside the checkout', () => {
    const copy = readFileSync(COPY, 'utf8');
    expect(copy).toMatch(/^# Data Platform API/);
    if (existsSync(SHARED)) expect(copy, 'docs/platform-api.md differs from ../shared/spec/platform-api.md: copy it over').toBe(readFileSync(SHARED, 'utf8'));
    else expect(underCi(), 'CI lays ../shared beside the checkout').toBe(false);
  });

  it('is what the repository points readers to, never the shared path', () => {
    for (const file of ['README.md', 'docs/client.md', 'src/types.ts']) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      expect(text, file).toContain('platform-api.md');
      expect(text, file).not.toContain('shared/spec');
    }
  });
});
