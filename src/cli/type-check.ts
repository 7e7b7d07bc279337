/**
 * `check`'s type check of TypeScript handlers: tsx runs .ts handlers without one (it strips the
 * types), so a type error passes `check` and fails only at run time, event after event. With the
 * project's own `typescript` (never this package's: a project without it says so and is not made to
 * install one), the handler files and what they import are checked with the project's tsconfig.json
 * (the nearest above the handlers), or strict NodeNext defaults without one.
 */
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts']);

export type TypeCheckResult =
  | { state: 'none' }
  | { state: 'ok'; files: number; version: string }
  | { state: 'errors'; errors: string[]; version: string }
  | { state: 'unavailable'; note: string };

type Ts = typeof import('typescript');

/** `typescript` as the project at `from` resolves it; undefined when it has none. */
function projectTypeScript(from: string): Ts | undefined {
  try {
    return createRequire(join(from, 'noop.js'))('typescript') as Ts;
  } catch {
    return undefined;
  }
}

const DEFAULT_OPTIONS = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  allowImportingTsExtensions: true,
} as const;

/** Type-checks the TypeScript files among `files` (absolute paths); one line per error, `file:line:column: TSnnnn: message`. */
export function typeCheckHandlers(files: readonly string[], handlersDir: string): TypeCheckResult {
  const tsFiles = files.filter((file) => TS_EXTENSIONS.has(extname(file)));
  if (tsFiles.length === 0) return { state: 'none' };
  const ts = projectTypeScript(handlersDir);
  if (ts === undefined) {
    return {
      state: 'unavailable',
      note: `${tsFiles.length} TypeScript handler(s) not type-checked: no typescript in this project (npm install -D typescript; --no-type-check to skip)`,
    };
  }
  const configPath = ts.findConfigFile(handlersDir, (path) => ts.sys.fileExists(path));
  let options: import('typescript').CompilerOptions;
  if (configPath === undefined) {
    options = ts.convertCompilerOptionsFromJson(DEFAULT_OPTIONS, handlersDir).options;
  } else {
    const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    options = parsed?.options ?? ts.convertCompilerOptionsFromJson(DEFAULT_OPTIONS, dirname(configPath)).options;
  }
  const program = ts.createProgram(tsFiles, { ...options, noEmit: true });
  const errors = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.category === ts.DiagnosticCategory.Error)
    .map((d) => {
      const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      if (d.file === undefined || d.start === undefined) return `TS${d.code}: ${message}`;
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      return `${d.file.fileName}:${line + 1}:${character + 1}: TS${d.code}: ${message}`;
    });
  return errors.length === 0 ? { state: 'ok', files: tsFiles.length, version: ts.version } : { state: 'errors', errors, version: ts.version };
}
