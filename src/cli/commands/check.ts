import { isAbsolute, resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { collectRunOptions, loadWorkerConfig } from '../../config/load.js';
import type { WorkerConfig } from '../../config/types.js';
import { ConfigError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { pickRunFlags, withRunOptions } from '../run-options.js';
import { loadHandlersLoader, type LoadedHandler } from '../seams.js';

/**
 * The handlers folder even when the rest of the configuration is incomplete: `check` reports the
 * missing options as problems but still shows what the handlers would receive.
 */
function handlersDirOf(flags: Record<string, unknown>, context: CliContext): string {
  let handlers: unknown = flags.handlers;
  try {
    handlers = collectRunOptions({ flags, env: context.env, cwd: context.cwd }).values.handlers ?? handlers;
  } catch {
    // A broken --config is already a reported problem; fall back to the flag or the default.
  }
  const dir = typeof handlers === 'string' && handlers.trim() !== '' ? handlers : './handlers';
  return isAbsolute(dir) ? dir : resolve(context.cwd, dir);
}

function routingTable(handlers: readonly LoadedHandler[], config: WorkerConfig | undefined): string[] {
  const rows = handlers.map((h) => [h.name, h.types.join(', ')] as const);
  if (config?.forwardUrl !== undefined) rows.push(['(forward)', `* -> ${config.forwardUrl}`]);
  const width = Math.max(7, ...rows.map(([name]) => name.length));
  return [`${'handler'.padEnd(width)}  event types`, ...rows.map(([name, types]) => `${name.padEnd(width)}  ${types}`)];
}

export function checkCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    command: 'check',
    describe: 'Load the configuration and the handlers, print which handler receives which event type, exit 0 or 1',
    builder: (yargs: Argv) =>
      withRunOptions(yargs)
        .example('$0 check --handlers ./handlers', 'List the handlers and their event types')
        .example('$0 check --config worker.json', 'Also validate a full run configuration'),
    handler: async (argv) => {
      const flags = pickRunFlags(argv);
      const problems: string[] = [];
      let config: WorkerConfig | undefined;
      try {
        config = loadWorkerConfig({ flags, env: context.env, cwd: context.cwd });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        problems.push(err.message);
      }
      const dir = config?.handlersDir ?? handlersDirOf(flags, context);

      let handlers: LoadedHandler[] = [];
      try {
        const loadHandlers = await loadHandlersLoader();
        handlers = await loadHandlers(dir);
        if (handlers.length === 0 && config?.forwardUrl === undefined) problems.push(`no handler modules in ${dir}`);
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
      }

      const out = [`handlers: ${dir}`, ...routingTable(handlers, config)];
      context.stdout.write(`${out.join('\n')}\n`);
      if (problems.length === 0) {
        context.stdout.write(`ok: ${handlers.length} handler(s)${config !== undefined ? `, destination ${config.destination}` : ''}\n`);
        setExitCode(0);
        return;
      }
      for (const problem of problems) context.stderr.write(`durable-worker: problem: ${problem.replace(/\s*\n\s*/g, ' ')}\n`);
      context.stdout.write(`${problems.length} problem(s)\n`);
      setExitCode(1);
    },
  };
}
