// `npm pack` / `npm publish` lifecycle (package.json prepack and postpack): the packed package.json
// carries no scripts. In a clone, `prepare` compiles dist/ on `npm ci`; in a package, dist/ is
// already there, and npm asks a user to approve any `prepare` of a package installed from a tarball
// or a git URL. `strip` keeps the clone's package.json aside and writes one without scripts;
// `restore` puts it back once the tarball is written.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const MANIFEST = 'package.json';
const KEPT = 'package.json.prepack';

const action = process.argv[2];
if (action === 'strip') {
  const text = readFileSync(MANIFEST, 'utf8');
  if (!existsSync(KEPT)) writeFileSync(KEPT, text);
  const { scripts: _scripts, allowScripts: _allowScripts, ...packed } = JSON.parse(text);
  writeFileSync(MANIFEST, `${JSON.stringify(packed, null, 2)}\n`);
} else if (action === 'restore') {
  if (existsSync(KEPT)) renameSync(KEPT, MANIFEST);
} else {
  process.stderr.write('usage: node scripts/pack-manifest.mjs strip|restore\n');
  process.exitCode = 2;
}
