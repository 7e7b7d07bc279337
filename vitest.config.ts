import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    setupFiles: ['test/setup/emulator-responses.ts'],
    // Rebuilds dist/ when a source is newer: the bin and the package exports are tested as built.
    globalSetup: ['test/setup/fresh-dist.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration suites start real servers and processes; two cores do not reward more forks.
    pool: 'forks',
    maxWorkers: 2,
  },
});
