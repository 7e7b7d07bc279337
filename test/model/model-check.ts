import fc from 'fast-check';

/**
 * Runs a model property with fast-check and, when it fails, throws one message with the shrunk
 * counterexample's failure and the command that replays it:
 *
 * - `DW_MODEL_RUNS`: scenarios per test (default: the test's own, small enough for CI);
 * - `DW_MODEL_SEED` / `DW_MODEL_PATH`: replay a run (the path picks the shrunk counterexample);
 * - `DW_MODEL_SHRINK_MS`: time given to shrinking after the first failure (default 30 s). Each
 *   shrink step is a whole worker run, so past the budget every further candidate passes at once
 *   and fast-check reports the smallest failure found so far (replayable like any other).
 */
export interface ModelCheckOptions {
  /** The test file, for the replay command. */
  testFile: string;
  defaultRuns: number;
  /** No shrinking at all (a step costs processes and a kill). */
  noShrink?: boolean;
}

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer (got ${raw})`);
  return value;
}

export function modelRuns(defaultRuns: number): number {
  return envNumber('DW_MODEL_RUNS') ?? defaultRuns;
}

export async function checkModel<T>(arbitrary: fc.Arbitrary<T>, property: (value: T) => Promise<void>, options: ModelCheckOptions): Promise<void> {
  const seed = envNumber('DW_MODEL_SEED') ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) | 0;
  const path = process.env.DW_MODEL_PATH;
  const shrinkBudgetMs = envNumber('DW_MODEL_SHRINK_MS') ?? 30_000;
  let firstFailureMs: number | undefined;
  const checked = fc.asyncProperty(options.noShrink === true ? fc.noShrink(arbitrary) : arbitrary, async (value) => {
    if (firstFailureMs !== undefined && Date.now() - firstFailureMs > shrinkBudgetMs) return;
    try {
      await property(value);
    } catch (err) {
      firstFailureMs ??= Date.now();
      throw err;
    }
  });
  const details = await fc.check(checked, {
    seed,
    numRuns: modelRuns(options.defaultRuns),
    ...(path === undefined || path === '' ? {} : { path }),
    // A replay runs the counterexample it names and stops there.
    ...(options.noShrink === true || (path !== undefined && path !== '') ? { endOnFailure: true } : {}),
  });
  if (!details.failed) return;
  const replay = `DW_MODEL_SEED=${details.seed}${details.counterexamplePath === null ? '' : ` DW_MODEL_PATH=${details.counterexamplePath}`} npx vitest run ${options.testFile}`;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`model check failed after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s)\nreplay: ${replay}\n${error}`);
}
