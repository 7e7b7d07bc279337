import type { Argv, CommandModule } from 'yargs';
import { loadWorkerConfig } from '../../config/load.js';
import { createLogger } from '../../observability/logger.js';
import type { CliContext } from '../context.js';
import { sizeRunHeaps } from '../heap-sizing.js';
import { pickRunFlags, withRunOptions } from '../run-options.js';
import { runWorkerProcess } from '../worker-process.js';

export function runCommand(context: CliContext, setExitCode: (code: number) => void): CommandModule {
  return {
    builder: (yargs: Argv) =>
      withRunOptions(yargs)
        .example(
          '$0 run --base-url https://api.example.com --tenant my-tenant --client-id "$ID" --client-secret-file /run/secrets/client-secret --destination my-consumer',
          'Consume my-consumer with the handlers in ./handlers',
        )
        .example(
          'DURABLE_WORKER_BASE_URL=http://127.0.0.1:8787 DURABLE_WORKER_API_KEY=... $0 run --destination dev-consumer --workers 4',
          'Options as env vars, four workerIds',
        )
        .example('$0 run --config worker.json --exit-when-idle', 'Options from a JSON file; exit once caught up')
        .epilogue('Every option is also an env var DURABLE_WORKER_<UPPER_SNAKE>. Exit codes: 0 drained or idle, 2 bad configuration, 1 fatal.'),
    handler: async (argv) => {
      const config = loadWorkerConfig({ flags: pickRunFlags(argv), env: context.env, cwd: context.cwd });
      const logger = createLogger({ level: config.logLevel, ...(context.stdout === process.stdout ? {} : { destination: context.stdout }) });
      // `run` owns its process: bound V8's young generations before the worker starts threads.
      const { stop, ...heapSizing } = sizeRunHeaps({ isolation: config.isolation });
      logger.debug({ heapSizing }, 'heap sizing');
      try {
        setExitCode(await runWorkerProcess(config, logger, context));
      } finally {
        stop();
      }
    },
  };
}
