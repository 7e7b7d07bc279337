// The container image's manifest (Dockerfile, deps stage): the image keeps every optional peer
// dependency (PostgreSQL and Redis drivers, the OpenTelemetry SDK and exporters), so that every
// store and --otel work in it without a derived image. Moves package.json's peerDependencies into
// dependencies; `npm install --omit=dev` then installs them at the versions package-lock.json pins
// (they are in it as devDependencies of the clone).
import { readFileSync, writeFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
for (const [name, range] of Object.entries(manifest.peerDependencies ?? {})) {
  manifest.dependencies[name] = range;
  delete manifest.devDependencies?.[name];
}
delete manifest.peerDependencies;
delete manifest.peerDependenciesMeta;
writeFileSync('package.json', `${JSON.stringify(manifest, null, 2)}\n`);
