import { isAbsolute, resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { collectRunOptions, loadWorkerConfig } from '../../config/load.js';
import type { WorkerConfig } from '../../config/types.js';
import { ConfigError } from '../../errors.js';
import { requireTransactionalStore } from '../../idempotency/transactional-store.js';
import type { CliContext } from '../context.js';
import type { HandlerLogger } from '../../handlers/define.js';
import { booleanFlag, booleanFlagValue, pickRunFlags, withRunOptions } from '../run-options.js';
import { loadHandlersLoader, type LoadedHandler } from '../seams.js';

const CREDENTIAL_KEYS = ['clientId', 'clientSecret', 'clientSecretFile', 'apiKey'] as const;

/**
 * `check` needs only the handlers folder. Options that `run` requires but that are not set are
 * reported as notes, not problems, and stand-ins let every value that IS given (ranges, URLs,
 * cross-field rules) still be validated.
 */
function validateGiven(flags: Record<string, unknown>, context: CliContext): { config?: WorkerConfig; notes: string[]; problem?: string } {
  let collected;
  try {
    collected = collectRunOptions({ flags, env: context.env, cwd: context.cwd });
  } catch (err) {
    if (err instanceof ConfigError) return { notes: [], problem: err.message };
    throw err;
  }
  const defaults: Record<string, unknown> = {};
  const missing: string[] = [];
  if (collected.values.baseUrl === undefined) {
    missing.push('--base-url');
    defaults.baseUrl = 'http://127.0.0.1';
  }
  if (collected.values.destination === undefined) {
    missing.push('--destination');
    defaults.destination = 'unset';
  }
  if (CREDENTIAL_KEYS.every((key) => collected.values[key] === undefined)) {
    missing.push('credentials (--client-id with --client-secret and --tenant, or --api-key)');
    defaults.apiKey = 'unset';
  }
  const notes = missing.length > 0 ? [`not set (run needs them): ${missing.join(', ')}`] : [];
  try {
    const config = loadWorkerConfig({ flags, env: context.env, cwd: context.cwd, defaults });
    return { config, notes };
  } catch (err) {
    if (err instanceof ConfigError) return { notes, problem: err.message };
    throw err;
  }
}

/** The handlers folder even when the configuration is broken: a fallback on the flag or the default. */
function handlersDirOf(flags: Record<string, unknown>, context: CliContext): string {
  const handlers = flags.handlers;
  const dir = typeof handlers === 'string' && handlers.trim() !== '' ? handlers : './handlers';
  return isAbsolute(dir) ? dir : resolve(context.cwd, dir);
}

function routingTable(handlers: readonly LoadedHandler[], config: WorkerConfig | undefined): string[] {
  const rows = handlers.map((h) => [h.name, h.types.join(', ')] as const);
  if (config?.forwardUrl !== undefined) rows.push(['(forward)', `* -> ${config.forwardUrl}`]);
  const width = Math.max(7, ...rows.map(([name]) => name.length));
  const batches = handlers.flatMap((h) =>
    h.batch === undefined ? [] : [`batch handler: ${h.name}${h.batch.maxBatchSize === undefined ? '' : ` (at most ${h.batch.maxBatchSize} events per call)`}`],
  );
  const transactional = handlers.flatMap((h) => (h.transactional === true ? [`transactional handler: ${h.name}`] : []));
  return [`${'handler'.padEnd(width)}  event types`, ...rows.map(([name, types]) => `${name.padEnd(width)}  ${types}`), ...batches, ...transactional];
}

/** `ctx.log` of a setup or teardown run by `check --setup`: one plain line per call on stderr. */
function lineLogger(stderr: CliContext['stderr'], bindings: Record<string, unknown>): HandlerLogger {
  const at = (level: string) => (obj: object | string, msg?: string) => {
    const text = typeof obj === 'string' ? obj : (msg ?? JSON.stringify(obj));
    stderr.write(`durable-worker: ${String(bindings.handler)} ${String(bindings.phase)} ${level}: ${text}\n`);
  };
  return { debug: () => {}, info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * `check --setup`: each handler's `setup` once, without retry (a failure is a problem naming the
 * handler), then the teardown of those that succeeded, bounded by --shutdown-timeout.
 */
async function checkSetups(
  handlers: readonly LoadedHandler[],
  context: CliContext,
  shutdownTimeoutSeconds: number,
): Promise<{ lines: string[]; problems: string[] }> {
  const { setUpHandlers, tearDownHandlers } = await import('../../handlers/life-cycle.js');
  const logger = (bindings: Record<string, unknown>) => lineLogger(context.stderr, bindings);
  const lines: string[] = [];
  const problems: string[] = [];
  const withSetup = handlers.filter((h) => h.setup !== undefined);
  for (const handler of withSetup) {
    try {
      await setUpHandlers([handler], { logger, retry: false });
      lines.push(`setup ok: ${handler.name}`);
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  for (const failure of await tearDownHandlers(handlers, { logger, timeoutMs: shutdownTimeoutSeconds * 1_000 })) {
    problems.push(`teardown of handler ${failure.handler} failed: ${failure.error instanceof Error ? failure.error.message : String(failure.error)}`);
  }
  if (withSetup.length === 0) lines.push('setup: no handler declares one');
  return { lines, problems };
}

/** `check --types-only`: the type errors as problems (exit 1), nothing else. */
async function typesOnly(dir: string, context: CliContext): Promise<number> {
  const [{ listHandlerModules }, { typeCheckHandlers }] = await Promise.all([import('../../handlers/loader.js'), import('../type-check.js')]);
  const types = typeCheckHandlers(await listHandlerModules(dir), dir);
  if (types.state !== 'errors') return 0;
  for (const error of types.errors) context.stderr.write(`durable-worker: problem: ${error}\n`);
  return 1;
}

export function checkCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    builder: (yargs: Argv) =>
      withRunOptions(yargs, [], {
        baseUrl: 'Public API base URL, e.g. http://127.0.0.1:8787 (optional here: checked when given; run requires it)',
        destination: 'Event destination id of a DURABLE_CONSUMER (optional here: checked when given; run requires it)',
      })
        .example('$0 check --handlers ./handlers', 'List the handlers and their event types')
        .example('$0 check --config worker.json', 'Also validate a full run configuration')
        .example('$0 check --setup', "Also run each handler's setup once (then its teardown)")
        .option('setup', booleanFlag("Run each handler's setup once, without retry (a failure is a problem naming the handler), then its teardown", 'Check:'))
        .option(
          'type-check',
          booleanFlag("Type-check TypeScript handlers with the project's typescript and tsconfig.json (default: true; --no-type-check to skip)", 'Check:'),
        )
        // dev's check after a save: the type check alone, no handler module imported (no side effect twice).
        .option('types-only', { ...booleanFlag('Only the type check, without loading the handlers', 'Check:'), hidden: true }),
    handler: async (argv) => {
      const flags = pickRunFlags(argv);
      // A bad value is a ConfigError: exit 2 naming the option, as for every flag.
      const runSetup = booleanFlagValue((argv as { setup?: unknown }).setup, '--setup');
      const typeCheck =
        (argv as { typeCheck?: unknown }).typeCheck === undefined || booleanFlagValue((argv as { typeCheck?: unknown }).typeCheck, '--type-check');
      const problems: string[] = [];
      if (booleanFlagValue((argv as { typesOnly?: unknown }).typesOnly, '--types-only'))
        return setExitCode(await typesOnly(handlersDirOf(flags, context), context));
      const { config, notes, problem } = validateGiven(flags, context);
      if (problem !== undefined) problems.push(problem);
      const dir = config?.handlersDir ?? handlersDirOf(flags, context);

      let handlers: LoadedHandler[] = [];
      try {
        const loadHandlers = await loadHandlersLoader();
        handlers = await loadHandlers(dir);
        if (handlers.length === 0 && config?.forwardUrl === undefined) problems.push(`no handler modules in ${dir}`);
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
      }
      // A handler that `run` would refuse to start with: bad configuration, exit 2 as `run` does.
      let refused = false;
      if (config !== undefined) {
        try {
          requireTransactionalStore(handlers, config.idempotencyUrl, context.cwd);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          problems.push(err.message);
          refused = true;
        }
      }

      if (typeCheck && handlers.length > 0) {
        const { typeCheckHandlers } = await import('../type-check.js');
        const types = typeCheckHandlers(
          handlers.map((h) => h.file),
          dir,
        );
        if (types.state === 'errors') problems.push(...types.errors);
        else if (types.state === 'unavailable') notes.push(types.note);
        else if (types.state === 'ok') notes.push(`types: ${types.files} TypeScript handler(s) checked (typescript ${types.version})`);
      }
      const out = [`handlers: ${dir}`, ...routingTable(handlers, config), ...notes.map((note) => `note: ${note}`)];
      if (runSetup && handlers.length > 0) {
        const setups = await checkSetups(handlers, context, config?.shutdownTimeoutSeconds ?? 25);
        out.push(...setups.lines);
        problems.push(...setups.problems);
      }
      context.stdout.write(`${out.join('\n')}\n`);
      if (problems.length === 0) {
        context.stdout.write(`ok: ${handlers.length} handler(s)\n`);
        setExitCode(0);
        return;
      }
      for (const problem of problems) context.stderr.write(`durable-worker: problem: ${problem.replace(/\s*\n\s*/g, ' ')}\n`);
      context.stdout.write(`${problems.length} problem(s)\n`);
      setExitCode(refused ? 2 : 1);
    },
  };
}
