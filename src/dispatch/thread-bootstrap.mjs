// Thread entry when durable-worker runs from its TypeScript sources (vitest, `node --import tsx`):
// tsx's scoped tsImport compiles thread-entry.ts and everything it imports inside this thread.
// (TOOLCHAIN: `--import tsx/esm` in execArgv does not reach worker threads on Node 20.)
// Compiled installs never load this file: they run dist/dispatch/thread-entry.js directly.
import { tsImport } from 'tsx/esm/api';

const entry = await tsImport('./thread-entry.ts', import.meta.url);

export default entry.default;
