import { open } from 'node:fs/promises';
import { readFileSync } from 'node:fs';

/**
 * The benchmark handler's effect: the event id appended to a file, one line per handler run. Each
 * thread (and the naive loops' process) opens the file once in append mode: every write of a line
 * lands whole at the end, whichever thread wrote it.
 */
export async function openEffects(path) {
  const file = await open(path, 'a');
  return {
    append: async (id) => void (await file.write(`${id}\n`)),
    close: () => file.close(),
  };
}

/** Lines of an effects file: how many, and how many distinct ids. */
export function countEffects(path) {
  const ids = readFileSync(path, 'utf8').split('\n').filter(Boolean);
  return { lines: ids.length, distinct: new Set(ids).size };
}
