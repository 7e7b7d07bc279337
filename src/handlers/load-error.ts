/**
 * Where a handler module failed to load, as `file:line:column` (1-based, as editors take it), said
 * once, before the error's first line:
 * - TypeScript (tsx's esbuild transform) reports its errors with a location;
 * - a JavaScript syntax error from Node's ES module loader carries none (Node prints it only for an
 *   uncaught error), so the file is checked with `node --check`, which prints the line and a caret;
 * - an error thrown while the module ran: the first frame of its stack in a user's file.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Location {
  file: string;
  line: number;
  column: number;
}

const asText = (location: Location) => `${location.file}:${location.line}:${location.column}`;

/**
 * esbuild's report (through tsx, from the module hooks' thread, so as text): `Transform failed
 * with N error(s):` then `file:line:column: ERROR: text`, the column 0-based.
 */
function transformLocation(err: unknown): { location: Location; text: string } | undefined {
  const message = err instanceof Error ? err.message : '';
  const match = /^(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(message);
  if (!message.startsWith('Transform failed') || match === null) return undefined;
  return { location: { file: match[1]!, line: Number(match[2]), column: Number(match[3]) + 1 }, text: `SyntaxError: ${match[4]}` };
}

/** `node --check`'s report: `file:line`, the source line, then a caret under the column. */
function checkSyntax(file: string): Promise<Location | undefined> {
  if (!['.js', '.mjs', '.cjs'].includes(extname(file))) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    execFile(process.execPath, ['--check', file], { timeout: 10_000 }, (_err, _stdout, stderr) => {
      const match = /^(.+):(\d+)\r?\n.*\r?\n(\s*)\^/m.exec(stderr);
      resolve(match === null ? undefined : { file: match[1]!, line: Number(match[2]), column: match[3]!.length + 1 });
    });
  });
}

/** The first stack frame in a file of the user's (not Node's, not a package's). */
function thrownAt(err: unknown): Location | undefined {
  const stack = err instanceof Error ? (err.stack ?? '') : '';
  for (const match of stack.matchAll(/\(?((?:file:\/\/)?\/[^\s():]+):(\d+):(\d+)\)?$/gm)) {
    const path = match[1]!.startsWith('file://') ? fileURLToPath(match[1]!.split('?')[0]!) : match[1]!;
    if (path.includes('/node_modules/') || !existsSync(path)) continue;
    return { file: path, line: Number(match[2]), column: Number(match[3]) };
  }
  return undefined;
}

const firstLine = (err: unknown) => {
  if (!(err instanceof Error)) return String(err);
  return `${err.name === 'Error' ? '' : `${err.name}: `}${err.message.split('\n')[0] ?? ''}`;
};

/** `<where>: cannot be loaded: <error's first line>`, `where` = file:line:column when known, else the file. */
export async function describeLoadError(file: string, err: unknown): Promise<string> {
  const transform = transformLocation(err);
  if (transform !== undefined) return `${asText(transform.location)}: cannot be loaded: ${transform.text}`;
  const location = err instanceof SyntaxError ? await checkSyntax(file) : thrownAt(err);
  if (location === undefined) return `${file}: cannot be loaded: ${firstLine(err)}`;
  // Thrown in a file the handler imports (a _lib/ helper): both, the handler first.
  if (location.file !== file) return `${file}: cannot be loaded: ${firstLine(err)} (at ${asText(location)})`;
  return `${asText(location)}: cannot be loaded: ${firstLine(err)}`;
}
