/**
 * Removes the dead letters a test wrote under its prefixes: records never expire, and the Redis and
 * PostgreSQL servers are shared with other tests and engineers.
 */
export async function deleteDeadLetters(url: string, prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  if (/^rediss?:/.test(url)) {
    const { createClient } = await import('redis');
    const client = createClient({ url });
    await client.connect();
    try {
      const base = 'dw:dlq:{dead-letters}:';
      const members = await client.zRange(`${base}index`, 0, -1);
      for (const prefix of prefixes) {
        // Members are `<15-digit time>|<prefix length>:<prefix>:<id>`.
        const mine = members.filter((m) => m.slice(16).startsWith(`${prefix.length}:${prefix}:`));
        if (mine.length > 0) {
          await client.zRem(`${base}index`, mine);
          await client.del(mine.map((m) => `${base}record:${m.slice(16)}`));
        }
        await client.del(`${base}dead-counts:${prefix.length}:${prefix}`);
        await client.sRem(`${base}prefixes`, prefix);
      }
    } finally {
      await client.close();
    }
    return;
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('DELETE FROM durable_worker_dead_letters WHERE prefix = ANY($1)', [prefixes]);
  } finally {
    await client.end();
  }
}
