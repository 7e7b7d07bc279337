#!/usr/bin/env node
// Checks the import structure of src/: no import circle between files, no cycle between the units of
// src/ (a first-level folder, or a file directly under src/), and no arrow from a lower layer up to a
// higher one. Run it with `npm run check:imports`; docs/contributing.md says what the layers mean.
//
//   node scripts/check-imports.mjs          exit 0 with a one-line summary, or 1 with every problem
//   node scripts/check-imports.mjs --graph  also print the folder graph (who imports whom)
//
// Every `import ... from`, `export ... from`, side-effect `import '...'` and `import('...')` with a
// relative path counts, `import type` included: a type-only circle still means that two files can only
// be understood together. Dependency-free on purpose (the check runs before anything is built).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The layers of src/, lowest first. A unit may import units of its own layer and of the layers
 * below; an import of a higher layer is a back-arrow. Every unit of src/ must be listed: a new folder
 * is placed here on purpose.
 */
export const LAYERS = [
  // Vocabulary and plumbing every part may use: errors, shared types, the clock and abort helpers,
  // the SQLite driver choice, file-system helpers.
  ['errors', 'types', 'runtime', 'sqlite', 'fs'],
  // Leaves with one concern each: ingest rules, the tracer, handler definitions, loading and routing.
  ['ingest', 'tracing', 'handlers'],
  // The two sides of the platform API (the client, the emulator); the built-in forwarding handler.
  ['client', 'emulator', 'forward'],
  // The idempotency store and its adapters.
  ['idempotency'],
  // The dead-letter sinks (they share the stores' connections and errors).
  ['dead-letter'],
  // The handlers' limits (rate, concurrency, adaptive) on the store's permits.
  ['limits'],
  // Logs, metrics and health, and the worker's events they listen to.
  ['observability'],
  // The dispatchers that run handlers, in-process or in threads.
  ['dispatch'],
  // The one schema of the options: defaults and validation.
  ['config'],
  // The worker, and the development loop that restarts it.
  ['worker', 'dev'],
  // What is built on a running worker: the test kit, the development console.
  ['testing', 'console', 'dead-letter-admin'],
  // The public faces: the commands, and the package's entries (the root, its rooms, their lazy entry points).
  ['cli', 'lazy-entry-points', 'entries', 'index', 'require'],
];

/**
 * Imports that reach up on purpose, each with its reason. A pair is `from` file → `to` file, both
 * relative to the repository root.
 */
export const ALLOWED_UPWARD = [
  {
    from: 'src/handlers/handler-set.ts',
    to: 'src/forward/forwarding-handler.ts',
    reason:
      'the set of handlers a worker runs includes the built-in forwarding handler when --forward-url is set; ' +
      'it is a handler like any other (made with defineHandler), loaded only when asked for',
  },
];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = /\.(?:ts|mts|cts|js|mjs|cjs)$/;
const DECLARATION = /\.d\.(?:ts|mts|cts)$/;

// --- reading imports ------------------------------------------------------------------------------

/** Words after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);

/**
 * The code's tokens with comments dropped and strings kept whole, enough to find import statements:
 * identifiers, strings (`{ str }`), and single punctuation characters. Template literals are skipped
 * except for the code in their `${...}`, so that a template holding import lines (a scaffold) is not
 * read as imports.
 */
export function tokenize(text, docComments = []) {
  const tokens = [];
  const braces = []; // for each open `{`: true when it opened a template's `${`
  let i = 0;
  const n = text.length;
  const last = () => tokens[tokens.length - 1];
  const regexAllowed = () => {
    const t = last();
    if (t === undefined) return true;
    if (t.str !== undefined) return false;
    if (/^[\w$]/.test(t.word)) return BEFORE_REGEX.has(t.word);
    return !(t.word === ')' || t.word === ']' || t.word === '}');
  };
  const skipTemplate = () => {
    // i is just after a backtick or a template's closing `}`
    while (i < n) {
      const c = text[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        tokens.push({ word: '`' });
        return;
      } else if (c === '$' && text[i + 1] === '{') {
        i += 2;
        braces.push(true);
        tokens.push({ word: '(' });
        return;
      } else i++;
    }
  };
  while (i < n) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      i = end === -1 ? n : end;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (text[i + 2] === '*') docComments.push(text.slice(i, end === -1 ? n : end));
      i = end === -1 ? n : end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = '';
      while (j < n && text[j] !== c && text[j] !== '\n') {
        if (text[j] === '\\') {
          value += text[j + 1] ?? '';
          j += 2;
        } else value += text[j++];
      }
      tokens.push({ str: value });
      i = j + 1;
    } else if (c === '`') {
      i++;
      skipTemplate();
    } else if (c === '/' && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      while (j < n && text[j] !== '\n') {
        const d = text[j];
        if (d === '\\') j++;
        else if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        j++;
      }
      j++;
      while (j < n && /[a-z]/i.test(text[j])) j++;
      tokens.push({ word: 'regex' });
      i = j;
    } else if (/[\w$]/.test(c)) {
      let j = i + 1;
      while (j < n && /[\w$]/.test(text[j])) j++;
      tokens.push({ word: text.slice(i, j) });
      i = j;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '{') {
      braces.push(false);
      tokens.push({ word: c });
      i++;
    } else if (c === '}') {
      i++;
      if (braces.pop() === true) {
        tokens.push({ word: ')' });
        skipTemplate();
      } else tokens.push({ word: c });
    } else {
      tokens.push({ word: c });
      i++;
    }
  }
  return tokens;
}

/**
 * The module specifiers a file names, each with its kind: `type` (`import type`, `export type`, or
 * every specifier marked `type`; in JavaScript, `import('...')` in a JSDoc type), `dynamic`
 * (`import('...')`, `typeof import('...')` included) or `value`.
 */
export function readImports(text, { javascript = false } = {}) {
  const docComments = [];
  const tokens = tokenize(text, docComments);
  const found = [];
  // A JavaScript file checked by TypeScript imports types in its JSDoc: `{import('./store.js').Store}`.
  if (javascript) {
    for (const comment of docComments) {
      for (const match of comment.matchAll(/\{[^}]*?import\(\s*(['"])([^'"]+)\1\s*\)/g)) {
        found.push({ specifier: match[2], kind: 'type' });
      }
    }
  }
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k];
    if (t.word === 'import') {
      const next = tokens[k + 1];
      const prev = tokens[k - 1];
      if (prev?.word === '.' || next?.word === '.') continue; // a method named import, import.meta
      if (next?.str !== undefined) {
        found.push({ specifier: next.str, kind: 'value' });
      } else if (next?.word === '(' && tokens[k + 2]?.str !== undefined) {
        found.push({ specifier: tokens[k + 2].str, kind: 'dynamic' });
      } else {
        const stmt = statementFrom(tokens, k);
        if (stmt) found.push(stmt);
      }
    } else if (t.word === 'export') {
      const stmt = statementFrom(tokens, k);
      if (stmt) found.push(stmt);
    }
  }
  return found;
}

/** Tokens that end an `import`/`export` statement that has no `from` (or begin the next one). */
const STATEMENT_END = new Set([
  ';',
  '=',
  'function',
  'class',
  'const',
  'let',
  'var',
  'interface',
  'enum',
  'default',
  'abstract',
  'async',
  'declare',
  'namespace',
  'module',
  'import',
  'export',
]);

/** From an `import`/`export` keyword: the `from '...'` that closes its statement, and its kind. */
function statementFrom(tokens, k) {
  const typeOnlyKeyword = tokens[k + 1]?.word === 'type' && tokens[k + 2]?.word !== '=';
  let depth = 0;
  let names = 0;
  let typedNames = 0;
  let expectName = true;
  for (let j = k + 1; j < tokens.length && j < k + 2000; j++) {
    const t = tokens[j];
    if (t.word === '{') {
      depth++;
      expectName = true;
    } else if (t.word === '}') depth--;
    else if (depth === 1 && t.word === ',') expectName = true;
    else if (depth === 1 && expectName && t.word !== undefined) {
      names++;
      if (t.word === 'type' && tokens[j + 1]?.word !== ',' && tokens[j + 1]?.word !== '}' && tokens[j + 1]?.word !== 'as') typedNames++;
      expectName = false;
    }
    if (depth === 0 && t.word === 'from' && tokens[j + 1]?.str !== undefined) {
      const typeOnly = typeOnlyKeyword || (names > 0 && typedNames === names && !hasDefaultOrNamespace(tokens, k, j));
      return { specifier: tokens[j + 1].str, kind: typeOnly ? 'type' : 'value' };
    }
    // A statement without `from` (a declaration, `export { a }`, `export default ...`) ends here.
    if (depth === 0 && STATEMENT_END.has(t.word)) return null;
    if (depth < 0) return null;
  }
  return null;
}

/** Whether `import a, { type B } from` or `import * as ns` brings a value besides the braces. */
function hasDefaultOrNamespace(tokens, k, fromIndex) {
  const first = tokens[k + 1];
  return first?.word !== '{' || tokens.slice(k + 1, fromIndex).some((t) => t.word === '*');
}

// --- the graph ------------------------------------------------------------------------------------

function sourceFiles(dir) {
  const files = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') files.push(...sourceFiles(path));
    } else if (SOURCE.test(entry.name) && !DECLARATION.test(entry.name)) files.push(path);
  }
  return files.sort();
}

/** The file a relative specifier names, as NodeNext resolves it (`./a.js` is `a.ts` in the sources). */
function resolveSpecifier(fromFile, specifier) {
  const base = resolve(dirname(fromFile), specifier);
  const candidates = [base];
  const swapped = base
    .replace(/\.js$/, '.ts')
    .replace(/\.mjs$/, '.mts')
    .replace(/\.cjs$/, '.cts');
  if (swapped !== base) candidates.push(swapped);
  candidates.push(`${base}.ts`, `${base}.js`, join(base, 'index.ts'), join(base, 'index.js'));
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

/**
 * The unit of a file given by its repository path (`src/worker/start.ts`): its first-level folder
 * under src/ (`worker`), or its own name for a file directly there (`src/errors.ts` is `errors`).
 */
export function unitOf(path) {
  const parts = path.split('/').slice(1);
  return parts.length === 1 ? parts[0].replace(SOURCE, '') : parts[0];
}

const STRENGTH = { type: 0, dynamic: 1, value: 2 };

/** Every source file of `root`/src and every relative import between them. */
export function buildGraph(root = ROOT) {
  const SRC = join(root, 'src');
  const rel = (path) => relative(root, path).split(sep).join('/');
  const files = sourceFiles(SRC);
  const edges = new Map(); // "from\0to" -> { from, to, kind }, with repository paths
  const unresolved = [];
  for (const file of files) {
    const javascript = /\.[cm]?js$/.test(file);
    for (const { specifier, kind } of readImports(readFileSync(file, 'utf8'), { javascript })) {
      if (!specifier.startsWith('.')) continue;
      const target = resolveSpecifier(file, specifier);
      if (target === undefined) {
        unresolved.push({ from: rel(file), specifier });
        continue;
      }
      if (!target.startsWith(SRC + sep) || !SOURCE.test(target)) continue; // package.json, page assets
      const key = `${rel(file)}\0${rel(target)}`;
      const known = edges.get(key);
      // One arrow per pair of files, of the strongest kind among its imports.
      if (known === undefined || STRENGTH[kind] > STRENGTH[known.kind]) edges.set(key, { from: rel(file), to: rel(target), kind });
    }
  }
  return { files: files.map(rel), edges: [...edges.values()], unresolved };
}

/** Strongly connected components of more than one node, or of one node that imports itself (Tarjan). */
export function circles(nodes, arrows) {
  const out = new Map(nodes.map((n) => [n, []]));
  for (const [from, to] of arrows) out.get(from)?.push(to);
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let counter = 0;
  // Iterative, so that a long chain of imports cannot overflow the call stack.
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work = [[start, 0]];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [node, next] = frame;
      const targets = out.get(node);
      if (next < targets.length) {
        frame[1]++;
        const target = targets[next];
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push([target, 0]);
        } else if (onStack.has(target)) low.set(node, Math.min(low.get(node), index.get(target)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(node)));
      }
      if (low.get(node) === index.get(node)) {
        const component = [];
        let member;
        do {
          member = stack.pop();
          onStack.delete(member);
          component.push(member);
        } while (member !== node);
        if (component.length > 1 || targets.includes(node)) found.push(component.sort());
      }
    }
  }
  return found.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/** Every problem of the import structure of `root`/src, with the graph it found them in. */
export function check({ root = ROOT, layers = LAYERS, allowedUpward = ALLOWED_UPWARD } = {}) {
  const { files, edges, unresolved } = buildGraph(root);
  const problems = [];

  // (a) circles between files
  const fileCircles = circles(
    files,
    edges.map((e) => [e.from, e.to]),
  );
  for (const members of fileCircles) {
    const inside = new Set(members);
    const arrows = edges.filter((e) => inside.has(e.from) && inside.has(e.to));
    problems.push({
      kind: 'file circle',
      text: `import circle between ${members.length} files:\n${arrows.map(describeEdge).join('\n')}`,
    });
  }

  // (b) cycles between units. An allowed upward import is left out: with it in, every allowed
  // arrow whose target imports back down would be reported as a cycle all the same.
  const allowed = new Set(allowedUpward.map((a) => `${a.from}\0${a.to}`));
  const layerOf = new Map();
  layers.forEach((layer, i) => layer.forEach((unit) => layerOf.set(unit, i)));
  const unitEdges = new Map(); // "a\0b" -> the file imports that make the arrow a → b
  for (const edge of edges) {
    const from = unitOf(edge.from);
    const to = unitOf(edge.to);
    if (from === to) continue;
    const key = `${from}\0${to}`;
    if (!unitEdges.has(key)) unitEdges.set(key, []);
    unitEdges.get(key).push(edge);
  }
  const units = [...new Set(files.map((f) => unitOf(f)))].sort();
  const unitArrows = [...unitEdges].filter(([, list]) => list.some((e) => !allowed.has(`${e.from}\0${e.to}`))).map(([key]) => key.split('\0'));
  for (const members of circles(units, unitArrows)) {
    const inside = new Set(members);
    const arrows = unitArrows.filter(([a, b]) => inside.has(a) && inside.has(b)).sort();
    // The arrows that close the cycle are the ones that do not go down the layers: those in full,
    // the downward ones by name only.
    const down = (a, b) => layerOf.get(a) > layerOf.get(b);
    const lines = arrows
      .filter(([a, b]) => !down(a, b))
      .map(
        ([a, b]) =>
          `  ${a} → ${b}:\n${unitEdges
            .get(`${a}\0${b}`)
            .map((e) => `  ${describeEdge(e)}`)
            .join('\n')}`,
      );
    const downward = arrows.filter(([a, b]) => down(a, b)).map(([a, b]) => `${a} → ${b}`);
    if (downward.length > 0) lines.push(`  closed by the downward arrows ${downward.join(', ')}`);
    problems.push({ kind: 'folder cycle', text: `folder cycle between ${members.join(', ')}:\n${lines.join('\n')}` });
  }

  // (c) arrows from a lower layer up
  for (const unit of units) {
    if (!layerOf.has(unit)) problems.push({ kind: 'unplaced', text: `src/${unit} is in no layer: add it to LAYERS in scripts/check-imports.mjs` });
  }
  for (const [key, list] of [...unitEdges].sort()) {
    const [from, to] = key.split('\0');
    if (!(layerOf.get(from) < layerOf.get(to))) continue;
    const up = list.filter((e) => !allowed.has(`${e.from}\0${e.to}`));
    if (up.length === 0) continue;
    problems.push({
      kind: 'upward',
      text: `${from} (layer ${layerOf.get(from)}) imports ${to} (layer ${layerOf.get(to)}), a higher layer:\n${up.map(describeEdge).join('\n')}`,
    });
  }

  for (const allowance of allowedUpward) {
    const edge = edges.find((e) => e.from === allowance.from && e.to === allowance.to);
    const up = edge && layerOf.get(unitOf(edge.from)) < layerOf.get(unitOf(edge.to));
    if (!up) {
      problems.push({
        kind: 'stale allowance',
        text: `ALLOWED_UPWARD lists ${allowance.from} → ${allowance.to}, which is ${edge ? 'no longer an arrow up' : 'no import today'}: remove it`,
      });
    }
  }

  for (const { from, specifier } of unresolved) {
    problems.push({ kind: 'unresolved', text: `${from} imports '${specifier}', which is no file` });
  }

  return { files, edges, units, unitEdges, problems };
}

function describeEdge(edge) {
  return `  ${edge.from} → ${edge.to}${edge.kind === 'value' ? '' : ` (${edge.kind})`}`;
}

const HEADINGS = {
  'file circle': 'Import circles between files',
  'folder cycle': 'Cycles between folders of src/',
  upward: 'Arrows from a lower layer up',
  unplaced: 'Units of src/ in no layer',
  unresolved: 'Relative imports that name no file',
  'stale allowance': 'Allowed upward imports that are gone',
};

function main() {
  const { files, edges, units, unitEdges, problems } = check();
  if (process.argv.includes('--graph')) {
    for (const key of [...unitEdges.keys()].sort()) {
      const [from, to] = key.split('\0');
      console.log(`${from} → ${to} (${unitEdges.get(key).length})`);
    }
  }
  const summary = `${files.length} files, ${edges.length} imports between files, ${units.length} units of src/ in ${LAYERS.length} layers`;
  if (problems.length === 0) {
    console.log(`check-imports: ok: ${summary}; no circle, no folder cycle, no arrow up`);
    return 0;
  }
  const lines = [`check-imports: ${problems.length} problem(s) in ${summary}`];
  for (const kind of Object.keys(HEADINGS)) {
    const some = problems.filter((p) => p.kind === kind);
    if (some.length === 0) continue;
    lines.push('', `${HEADINGS[kind]} (${some.length}):`);
    for (const p of some) lines.push(`- ${p.text}`);
  }
  console.error(lines.join('\n'));
  return 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main();
}
