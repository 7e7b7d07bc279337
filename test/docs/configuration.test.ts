import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, renderConfigurationReference } from '../../src/cli/config-reference.js';
import { RUN_OPTIONS, envName, flagName } from '../../src/config/options.js';

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` generates from the zod schema (run it after changing an option)', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8'), 'docs/configuration.md is out of date: run `npm run docs:config` and commit it').toBe(
      renderConfigurationReference(),
    );
  });

  it('lists every run option with its flag, env var and the schema default and range', () => {
    const doc = renderConfigurationReference();
    for (const option of RUN_OPTIONS) {
      expect(doc).toContain(`| \`${flagName(option.key)}\` | \`${envName(option.key)}\` | \`${option.key}\` |`);
    }
    expect(doc).toMatch(/\| `--limit` \|[^\n]*\| integer \| `20` \| 1\.\.100 \|/);
    expect(doc).toMatch(/\| `--base-url` \|[^\n]*\*\*required\*\*/);
    expect(doc).toMatch(/\| `--isolation` \|[^\n]*`thread`, `none`/);
  });
});
