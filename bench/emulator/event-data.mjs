/**
 * The data of the benchmarks' events (plain JavaScript: bench/dispatch runs without a TypeScript
 * loader). `small`: a counter and 64 characters. `entry`: an entry update as the platform sends
 * them, the entry before and after (~1 KB of JSON).
 */
export function eventData(kind, n, subject) {
  if (kind === 'small') return { n, payload: 'x'.repeat(64) };
  const entry = (version) => ({
    id: subject,
    sourceId: 'src_bench',
    values: {
      sku: `SKU-${n % 997}`,
      title: `Product ${subject}`,
      price: { amount: 1999 + version, currency: 'EUR' },
      stock: 40 + version,
      tags: ['bench', 'entry', `v${version}`],
    },
    tags: ['imported'],
    version,
    updatedAt: new Date(1_780_000_000_000 + version * 1_000).toISOString(),
  });
  return { sourceId: 'src_bench', entryId: subject, previous: entry(n), current: entry(n + 1), changed: ['values.price', 'values.stock'] };
}
