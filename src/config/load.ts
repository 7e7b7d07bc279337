import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import type * as z from 'zod';
import { ConfigError } from '../errors.js';
import { requirePackages } from '../runtime/optional-package.js';
import { redactUrl } from '../runtime/redact-url.js';
import { RUN_OPTION_KEYS, SECRET_OPTION_KEYS, envName, flagName, toCamel, type RunOptionKey } from './options.js';
import { createWorkerConfigSchema } from './schema.js';
import type { WorkerConfig } from './types.js';

/**
 * Where `run` options come from, highest first: flags, env `DURABLE_WORKER_<UPPER_SNAKE>`, the JSON
 * file of `--config`, schema defaults. Merging happens here; validation in the one schema.
 */

type Source = { kind: 'flag' } | { kind: 'env'; name: string } | { kind: 'file'; path: string } | { kind: 'default' };

/** Raw option values with the place each came from (for messages that name what the user wrote). */
export interface CollectedOptions {
  values: Partial<Record<RunOptionKey, unknown>>;
  sources: Partial<Record<RunOptionKey, Source>>;
}

export interface LoadWorkerConfigOptions {
  /** Parsed flags (camelCase keys, as yargs gives them). Unknown keys are ignored (yargs is strict). */
  flags?: Record<string, unknown>;
  /** Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Folder for relative paths. Default: process.cwd(). */
  cwd?: string;
  /** Default --worker-id-prefix. Default: os.hostname(). */
  hostname?: string;
  /** Lowest-precedence values, below the config file (e.g. `dev`'s emulator defaults). */
  defaults?: Record<string, unknown>;
  /**
   * Options a command has no use for, not read from flags, env or the config file (`defaults` still
   * apply): `dead-letters` needs no credentials, and an operator's copy of the worker's config may
   * name a secret file only the pod has.
   */
  omit?: readonly RunOptionKey[];
}

const RUN_KEYS: ReadonlySet<string> = new Set(RUN_OPTION_KEYS);
const URL_KEYS: ReadonlySet<string> = new Set(['baseUrl', 'authUrl', 'forwardUrl', 'idempotency', 'deadLetter']);

/** An empty flag or env var means "not set" (`DURABLE_WORKER_TENANT=` in a compose file). */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');
}

/** Reads the JSON object of `--config FILE`; keys may be camelCase or kebab-case option names. */
export function readConfigFile(path: string, cwd: string, label = '--config'): Record<string, unknown> {
  const absolute = isAbsolute(path) ? path : resolve(cwd, path);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new ConfigError(`${label}: cannot read ${absolute} (${typeof code === 'string' ? code : String(err)})`, label, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${label}: ${absolute} is not valid JSON (${err instanceof Error ? err.message : String(err)})`, label);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`${label}: ${absolute} must hold a JSON object of options`, label);
  }
  return parsed as Record<string, unknown>;
}

function fileLayer(path: string, cwd: string): { values: Record<string, unknown>; path: string } {
  const absolute = isAbsolute(path) ? path : resolve(cwd, path);
  const raw = readConfigFile(absolute, cwd);
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    const key = toCamel(name);
    if (key === 'config') throw new ConfigError(`--config: ${absolute} cannot name another config file`, '--config');
    if (!RUN_KEYS.has(key)) throw new ConfigError(`--config: unknown option "${name}" in ${absolute}`, '--config');
    values[key] = value;
  }
  return { values, path: absolute };
}

/** Merges flags > env > config file (defaults come from the schema). */
export function collectRunOptions(options: LoadWorkerConfigOptions = {}): CollectedOptions {
  const flags = options.flags ?? {};
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const configPath = isSet(flags.config) ? flags.config : env[envName('config')];
  if (configPath !== undefined && typeof configPath !== 'string') throw new ConfigError('--config must be a file path', '--config');
  const file = isSet(configPath) ? fileLayer(configPath as string, cwd) : undefined;

  const collected: CollectedOptions = { values: {}, sources: {} };
  for (const key of RUN_OPTION_KEYS) {
    const env_ = envName(key);
    const read = options.omit?.includes(key) !== true;
    if (read && isSet(flags[key])) {
      collected.values[key] = flags[key];
      collected.sources[key] = { kind: 'flag' };
    } else if (read && isSet(env[env_])) {
      collected.values[key] = env[env_];
      collected.sources[key] = { kind: 'env', name: env_ };
    } else if (read && file !== undefined && isSet(file.values[key])) {
      collected.values[key] = file.values[key];
      collected.sources[key] = { kind: 'file', path: file.path };
    } else if (isSet(options.defaults?.[key])) {
      collected.values[key] = options.defaults?.[key];
      collected.sources[key] = { kind: 'default' };
    }
  }
  return collected;
}

function optionLabel(key: string, source: Source | undefined): string {
  const flag = flagName(key);
  if (source?.kind === 'env') return `${flag} (from ${source.name})`;
  if (source?.kind === 'file') return `${flag} (from ${source.path})`;
  return flag;
}

function shownValue(key: string, value: unknown): string | undefined {
  if (value === undefined || SECRET_OPTION_KEYS.has(key)) return undefined;
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return undefined;
  if (URL_KEYS.has(key)) text = redactUrl(text);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** ONE line naming the option as the user spelled it; never a secret value. */
function toConfigError(error: z.ZodError, collected: CollectedOptions): ConfigError {
  // A wrong value the user typed says more than an option still missing: report it first.
  // Cross-field issues (with params) only exist once every field is valid: keep their order.
  const given = error.issues.find(
    (i) => (i as { params?: unknown }).params === undefined && typeof i.path[0] === 'string' && collected.values[i.path[0] as RunOptionKey] !== undefined,
  );
  const issue = given ?? error.issues[0];
  if (issue === undefined) return new ConfigError('invalid configuration');
  if (issue.code === 'unrecognized_keys') {
    const name = issue.keys[0] ?? '?';
    return new ConfigError(`unknown option ${flagName(name)}`, flagName(name));
  }
  const params = (issue as { params?: { standalone?: boolean; crossField?: boolean } }).params;
  if (params?.standalone) return new ConfigError(issue.message);
  const key = typeof issue.path[0] === 'string' ? issue.path[0] : undefined;
  if (key === undefined) return new ConfigError(issue.message);
  const label = optionLabel(key, collected.sources[key as RunOptionKey]);
  const separator = issue.message.startsWith(':') ? '' : ' ';
  const raw = collected.values[key as RunOptionKey];
  const shown = params?.crossField || issue.message === 'is required' ? undefined : shownValue(key, raw);
  return new ConfigError(`${label}${separator}${issue.message}${shown !== undefined ? ` (got ${shown})` : ''}`, flagName(key));
}

function validate(collected: CollectedOptions, cwd: string, host: string): WorkerConfig {
  const schema = createWorkerConfigSchema({ cwd, hostname: host });
  const result = schema.safeParse(collected.values);
  if (!result.success) throw toConfigError(result.error, collected);
  requireUsedPackages(result.data);
  return result.data;
}

/** The optional packages (package.json peerDependenciesMeta) this configuration uses are installed, else exit 2 naming them. */
function requireUsedPackages(config: WorkerConfig): void {
  for (const [url, option] of [
    [config.idempotencyUrl, '--idempotency'],
    [config.deadLetterUrl, '--dead-letter'],
  ] as const) {
    if (/^postgres(ql)?:\/\//.test(url)) requirePackages(['pg'], `${option} postgres://`, option);
    if (/^rediss?:\/\//.test(url)) requirePackages(['redis'], `${option} redis://`, option);
  }
  if (config.otel === true) requirePackages(['@opentelemetry/sdk-trace-node', '@opentelemetry/resources'], '--otel', '--otel');
}

/** Resolves the `run` configuration from flags, env and `--config`; throws ConfigError (one line). */
export function loadWorkerConfig(options: LoadWorkerConfigOptions = {}): WorkerConfig {
  const cwd = options.cwd ?? process.cwd();
  return validate(collectRunOptions({ ...options, cwd }), cwd, options.hostname ?? hostname());
}

/**
 * Programmatic form: `input` keys are the camelCase option names (`baseUrl`, `visibility`,
 * `clientSecretFile`...), optionally `config` (a JSON file, lower precedence). The environment is
 * NOT read: code says what it means. Relative paths resolve against process.cwd().
 */
export function resolveWorkerConfig(input: Record<string, unknown>): WorkerConfig {
  const flags: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) {
    const key = toCamel(name);
    if (key !== 'config' && !RUN_KEYS.has(key)) throw new ConfigError(`unknown option "${name}"`, name);
    flags[key] = value;
  }
  return loadWorkerConfig({ flags, env: {} });
}
