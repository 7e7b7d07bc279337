import type { DevConsole } from '../console/index.js';
import { loadStartWorker, type StartWorker } from './seams.js';

/** `dev --watch` (the default): `dev`'s worker start, made to reload the handlers on a save and tell the console. */
export async function withHandlerReload(start: StartWorker | undefined, devConsole: DevConsole | undefined): Promise<StartWorker> {
  const { startWithReload } = await import('../dev/reloading-worker.js');
  return startWithReload(start ?? (await loadStartWorker()), devConsole === undefined ? {} : { onStatus: (status) => devConsole.reloaded(status) });
}
