/**
 * docs/architecture.md (and docs/contributing.md beside it) use the code's names: a reader who follows
 * an event with the page open must find every file it cites and every name it gives in backticks in
 * the repository.
 *
 * What is checked, and how:
 * - **Paths.** Every `src/`, `test/`, `bench/`, `docs/`, `examples/`, `scripts/`, `handlers/`,
 *   `helm/` or `deploy/` path in the page (in backticks, in a link, or in the prose; a folder too)
 *   exists. Every relative link resolves from docs/, and its `#anchor`, if any, is a heading of the
 *   page it names.
 * - **Names in backticks**, by their shape:
 *   - `PascalCase` is a class, interface, type, enum, function or const defined in src/;
 *   - `Type.member` (and `Type.member(...)`) is a member of that type, or of a type it extends;
 *   - `camelCase` (one capital at least), with or without `(...)`, is a function, const, method or
 *     property defined in src/; `receiver.member(...)` is a member of the type named after the receiver
 *     (`dispatcher.open` is `Dispatcher.open`) when there is one, otherwise a member defined anywhere;
 *   - a call written with argument names (`start(run)`) names the parameters of some definition of
 *     that function (a page that writes `open(lease)` for `open(signal)` teaches the wrong word);
 *   - `#field` is a private member defined in src/;
 *   - `word:word` is a name of the worker's event bus, a string in src/;
 *   - `snake_case` is a metric (without its `durable_worker_` prefix) or another name the code spells
 *     that way: a string in src/;
 *   - `--option` (with a value or not) is an option of the CLI, or of a script of bench/ or scripts/:
 *     its name appears there;
 *   - `durable-worker/sub` is a subpath in package.json's `exports`;
 *   - `name.ts` (a bare file name) is the name of a file at the root or in src/, test/, bench/,
 *     scripts/ or docs/;
 *   - a `PascalCase` name that JavaScript or Node defines globally (`AbortSignal`, `MessagePort`) is
 *     taken as it is.
 * - **Commands** in backticks (`npm ...`, `node ...`, `npx ...`) are left to test/docs/commands.test.ts
 *   and to the path check above.
 * - **Not checked** (not names of code): single letters and formulas (anything with spaces or
 *   operators: `H + P < --max-leases` is checked only for its options), HTTP routes (`/readyz`),
 *   ENV_NAMES and header names, quoted values (`'source_entry.updated'`), `<placeholders>`, and plain
 *   lower-case words (outcomes, commands and option values such as `ok`, `dev`, `thread`, which other
 *   tests pin), and the few foreign names in FOREIGN below, each with where it comes from.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-commands.js';

/** The pages a contributor reads beside the code; both use the code's own names. */
const PAGES = ['docs/architecture.md', 'docs/contributing.md'];

/** Names in backticks that are not this repository's code, and where they come from. */
const FOREIGN: Record<string, string> = {
  'consume()': "NATS JetStream's pull consumer, named as the model for flow control",
  t_pull: 'a variable of the flow model formula (the round trip of a pull), not a name in the code',
};

const REPO_PATH = /(?<![\w./@:-])(?:src|test|bench|docs|examples|scripts|handlers|helm|deploy)\/[\w./-]*/g;
const IDENT = '[A-Za-z_$][\\w$]*';

// --- the page -------------------------------------------------------------------------------------

interface Cite {
  text: string;
  line: number;
}

/** The page's lines with fenced blocks blanked (kept for paths, which may sit in a diagram). */
function pageParts(text: string): { prose: string; all: string } {
  const lines = text.split('\n');
  let fenced = false;
  const prose = lines.map((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
  return { prose: prose.join('\n'), all: text };
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

function backticked(prose: string): Cite[] {
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => ({ text: m[1]!.trim(), line: lineOf(prose, m.index) }));
}

function links(prose: string): Cite[] {
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => ({ text: m[1]!, line: lineOf(prose, m.index) }));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

// --- the code -------------------------------------------------------------------------------------

interface Code {
  /** Every source file of src/ with its comments dropped. */
  files: { path: string; text: string }[];
  /** Top-level declarations: class, interface, type, enum, function, const, let. */
  declared: Set<string>;
  /** Members: methods, properties, object keys, private fields, defined anywhere. */
  members: Set<string>;
  all: string;
  /** `all` with the scripts of bench/ and scripts/, whose options a page may cite. */
  withTools: string;
  /** The names of every file of src/, test/, bench/, scripts/ and docs/. */
  fileNames: Set<string>;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => /\.(?:ts|mts|js|mjs)$/.test(path) && !path.endsWith('.d.ts'))
    .map((path) => join(dir, path));
}

function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
}

function readCode(): Code {
  const files = sourceFiles(join(ROOT, 'src')).map((path) => ({ path, text: withoutComments(readFileSync(path, 'utf8')) }));
  const tools = ['bench', 'scripts'].flatMap((dir) => sourceFiles(join(ROOT, dir))).map((path) => readFileSync(path, 'utf8'));
  const fileNames = new Set([
    ...readdirSync(ROOT),
    ...['src', 'test', 'bench', 'scripts', 'docs'].flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((p) => p.split(/[\\/]/).pop()!),
    ),
  ]);
  const declared = new Set<string>();
  const members = new Set<string>();
  for (const { text } of files) {
    for (const m of text.matchAll(new RegExp(`\\b(?:class|interface|type|enum|function\\*?|const|let|var)\\s+(${IDENT})`, 'g'))) declared.add(m[1]!);
    for (const m of text.matchAll(/\bexport\s*\{([^}]*)\}/g)) {
      for (const part of m[1]!.split(','))
        declared.add(
          part
            .trim()
            .split(/\s+as\s+/)
            .pop()!
            .replace(/^type\s+/, ''),
        );
    }
    // A member at the start of a line: `name(`, `name?(`, `name:`, `name =`, `name<T>(`, with modifiers.
    const member = new RegExp(
      `^\\s*(?:(?:public|private|protected|static|readonly|async|get|set|override|abstract|declare)\\s+)*(#?${IDENT})\\??\\s*[(:=<]`,
      'gm',
    );
    for (const m of text.matchAll(member)) members.add(m[1]!);
    // Object literal keys and shorthand methods after `{` or `,` on the same line.
    for (const m of text.matchAll(new RegExp(`[{,]\\s*(${IDENT})\\??\\s*[(:]`, 'g'))) members.add(m[1]!);
  }
  const all = files.map((f) => f.text).join('\n');
  return { files, declared, members, all, withTools: [all, ...tools].join('\n'), fileNames };
}

/** The body of `class|interface|type Name`, and the names it extends. */
function bodiesOf(code: Code, name: string): { body: string; bases: string[] }[] {
  const out: { body: string; bases: string[] }[] = [];
  const head = new RegExp(`\\b(?:class|interface|type)\\s+${name}\\b([^{;]*)\\{`, 'g');
  for (const { text } of code.files) {
    for (const m of text.matchAll(head)) {
      let depth = 0;
      let end = m.index + m[0].length - 1;
      for (; end < text.length; end++) {
        if (text[end] === '{') depth++;
        else if (text[end] === '}' && --depth === 0) break;
      }
      const bases = [...(m[1]!.match(/\b(?:extends|implements)\s+(.+)$/)?.[1] ?? '').matchAll(/\b([A-Z][\w$]*)/g)].map((b) => b[1]!);
      out.push({ body: text.slice(m.index + m[0].length, end), bases });
    }
  }
  return out;
}

function hasMember(code: Code, type: string, member: string, seen = new Set<string>()): boolean {
  if (seen.has(type)) return false;
  seen.add(type);
  const pattern = new RegExp(
    `(?:^|[\\s{;,])(?:(?:readonly|async|get|set|static|public|private|protected)\\s+)*${member.replace('$', '\\$')}\\??\\s*[(:=<]`,
    'm',
  );
  return bodiesOf(code, type).some(({ body, bases }) => pattern.test(body) || bases.some((b) => hasMember(code, b, member, seen)));
}

/** The parameter names of every definition `name(...)` followed by a body or a return type. */
function parameterLists(code: Code, name: string): string[][] {
  const lists: string[][] = [];
  const start = new RegExp(`(?:^|[^\\w$.#])${name}\\??\\s*(?:<[^>()]*>)?\\(`, 'g');
  for (const { text } of code.files) {
    for (const m of text.matchAll(start)) {
      let depth = 1;
      let i = m.index + m[0].length;
      const open = i;
      for (; i < text.length && depth > 0; i++) {
        if (text[i] === '(') depth++;
        else if (text[i] === ')') depth--;
      }
      const after = text.slice(i, i + 3).trimStart();
      if (!after.startsWith(':') && !after.startsWith('{') && !after.startsWith('=>')) continue; // a call
      const inside = text.slice(open, i - 1);
      const params: string[] = [];
      let level = 0;
      let current = '';
      for (const c of inside) {
        if ('([{<'.includes(c)) level++;
        else if (')]}>'.includes(c)) level--;
        if (c === ',' && level === 0) {
          params.push(current);
          current = '';
        } else current += c;
      }
      if (current.trim() !== '') params.push(current);
      lists.push(
        params.map(
          (p) =>
            p
              .trim()
              .replace(/^\.\.\./, '')
              .match(new RegExp(`^(${IDENT})`))?.[1] ?? p.trim(),
        ),
      );
    }
  }
  return lists;
}

/**
 * Whether `--name` is an option of a command: the options are declared in camelCase (`retryBackoffMax`
 * for `--retry-backoff-max`, src/config/options.ts) or by their kebab name (the commands' own);
 * `--no-name` is the negation yargs derives, `--help` and `--version` its own.
 */
function isOption(code: Code, name: string): boolean {
  if (name === 'help' || name === 'version') return true;
  const base = name.startsWith('no-') ? name.slice(3) : name;
  const camel = base.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const text = code.withTools;
  return new RegExp(`['"\\s{,]${camel}['"]?\\??\\s*:`).test(text) || text.includes(`'${base}'`) || text.includes(`--${base}`);
}

const pascal = (word: string) => word[0]!.toUpperCase() + word.slice(1);

/** Why a name in backticks is not a name of the code, or undefined when it is (or is not a name). */
function checkName(code: Code, cite: string): string | undefined {
  if (FOREIGN[cite] !== undefined) return undefined;
  if (/^(?:npm|npx|node|bash|eval|git|docker|helm|curl) /.test(cite)) return undefined; // a command
  if (/^[\w.-]+\.(?:ts|mts|cts|js|mjs|md|json|sh)$/.test(cite)) {
    return code.fileNames.has(cite) ? undefined : 'no file of that name in the repository';
  }
  if (/^--[a-z]/.test(cite) || /\s--[a-z]/.test(cite)) {
    const missing = [...cite.matchAll(/--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!).filter((o) => !isOption(code, o));
    return missing.length > 0 ? `no option ${missing.map((o) => `--${o}`).join(', ')} in src/` : undefined;
  }
  if (/^durable-worker\/[\w-]+$/.test(cite)) {
    const exports = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports;
    return exports[`./${cite.split('/')[1]}`] === undefined ? 'not a subpath of the package' : undefined;
  }
  if (/^[a-z]+:[a-z-]+$/.test(cite)) {
    return code.all.includes(`'${cite}'`) ? undefined : 'no event of that name in src/';
  }
  if (/^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/.test(cite)) {
    return code.all.includes(cite) ? undefined : 'spelled nowhere in src/';
  }
  if (/^#[A-Za-z_$][\w$]*$/.test(cite)) {
    return code.members.has(cite) ? undefined : 'no private member of that name in src/';
  }
  // Code-shaped: Name, Name.member, name(args), receiver.member(args).
  const shape = new RegExp(`^(?:(${IDENT})\\.)?(#?${IDENT})(\\(([^()]*)\\))?$`).exec(cite);
  if (shape === null) return undefined; // a formula, a route, a placeholder, a value
  const [, receiver, name, call, args] = shape as unknown as [string, string | undefined, string, string | undefined, string | undefined];
  const isPascal = /^[A-Z][a-z0-9]+[A-Za-z0-9]*$/.test(name) && /[a-z]/.test(name);
  const isCamel = /^[a-z][a-z0-9]*[A-Z]/.test(name);
  if (receiver === undefined && call === undefined && !isPascal && !isCamel) return undefined; // a plain word
  if (receiver === undefined && call === undefined && isPascal) {
    if (name in globalThis) return undefined; // AbortSignal, MessagePort: JavaScript's or Node's own
    return code.declared.has(name) ? undefined : 'no class, interface, type or function of that name in src/';
  }
  if (receiver !== undefined && !/^[a-z]/.test(receiver) && !/^[A-Z]/.test(receiver)) return undefined;
  if (receiver !== undefined) {
    const type = /^[A-Z]/.test(receiver) ? receiver : pascal(receiver);
    const typeExists = bodiesOf(code, type).length > 0;
    if (/^[A-Z]/.test(receiver) && !typeExists) return `no class or interface ${receiver} in src/`;
    if (typeExists && !hasMember(code, type, name)) return `${type} has no member ${name}`;
    if (!typeExists && !code.members.has(name)) return `no member ${name} defined in src/`;
  } else if (!code.declared.has(name) && !code.members.has(name)) {
    return `no function, method or property ${name} defined in src/`;
  }
  if (args !== undefined && args.trim() !== '') {
    const wanted = args.split(',').map((a) => a.trim());
    if (wanted.every((a) => new RegExp(`^${IDENT}$`).test(a))) {
      const lists = parameterLists(code, name);
      if (!lists.some((params) => wanted.every((a, i) => params[i] === a))) {
        const seen = [...new Set(lists.map((p) => `${name}(${p.join(', ')})`))].slice(0, 3).join(', ');
        return `no definition of ${name} takes (${wanted.join(', ')})${seen ? `: ${seen}` : ''}`;
      }
    }
  }
  return undefined;
}

// --- the tests ------------------------------------------------------------------------------------

describe.each(PAGES)('%s cites the repository as it is', (PAGE) => {
  const text = readFileSync(join(ROOT, PAGE), 'utf8');
  const { prose, all } = pageParts(text);

  it('every repository path it names exists', () => {
    const missing: string[] = [];
    for (const m of all.matchAll(REPO_PATH)) {
      const path = m[0].replace(/[.,:;]+$/, '');
      if (!existsSync(join(ROOT, path))) missing.push(`${PAGE}:${lineOf(all, m.index)}: ${path}`);
    }
    expect(missing).toEqual([]);
  });

  it('every relative link resolves, anchors included', () => {
    const broken: string[] = [];
    for (const { text: target, line } of links(prose)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file =
        path === ''
          ? PAGE
          : relative(ROOT, normalize(join(ROOT, dirname(PAGE), path)))
              .split('\\')
              .join('/');
      if (!existsSync(join(ROOT, file))) broken.push(`${PAGE}:${line}: ${target} (no ${file})`);
      else if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor))
        broken.push(`${PAGE}:${line}: ${target} (no heading #${anchor} in ${file})`);
    }
    expect(broken).toEqual([]);
  });

  it('every code name it gives in backticks is defined in src/', () => {
    const code = readCode();
    const wrong: string[] = [];
    for (const { text: cite, line } of backticked(prose)) {
      if (new RegExp(`^${REPO_PATH.source}$`).test(cite)) continue; // paths: the first test
      const why = checkName(code, cite);
      if (why !== undefined) wrong.push(`${PAGE}:${line}: \`${cite}\`: ${why}`);
    }
    expect(wrong).toEqual([]);
  });
});

describe('the name check itself', () => {
  const code = readCode();
  it('accepts names the code defines, with their parameters', () => {
    for (const cite of [
      'PermanentError',
      'LeaseDispatch.start',
      'defineHandler',
      'close()',
      'start(run)',
      'atDeadline',
      'lease:pulled',
      'in_flight_events',
      '--max-in-progress',
      'durable-worker/testing',
      'ctx.signal',
      'AbortSignal',
      'held-lease.ts',
      '--only',
    ]) {
      expect(checkName(code, cite), cite).toBeUndefined();
    }
  });

  it('rejects names the code does not define, or a call with the wrong parameter names', () => {
    for (const cite of [
      'NoSuchClass',
      'LeaseDispatch.open',
      'noSuchFunction()',
      'start(lease, turn)',
      'loop:exploded',
      'no_such_metric',
      '--no-such-option',
      'durable-worker/nothing',
      '#noSuchField',
      'no-such-file.ts',
    ]) {
      expect(checkName(code, cite), cite).toBeDefined();
    }
  });

  it('leaves formulas, routes, values and placeholders alone', () => {
    for (const cite of ['H + P < --max-leases', '/readyz', 'ok', "'source_entry.updated'", '<handler name>:<event id>', 'REDIS_URL', 'U', '1,000 / (L + h)']) {
      expect(checkName(code, cite), cite).toBeUndefined();
    }
  });
});
