import { randomUUID } from 'node:crypto';
import type { ReadValue } from '../../src/ingest/index.js';
import type { ReadEntry as SourceEntry, ReadItem } from '../../src/emulator/sources/read-shape.js';
import type { PropertyDataType } from '../../src/types.js';
import { registerDestinationRoutes, type DestinationDeps } from '../../src/emulator/destinations/index.js';
import { startHarness, type Harness } from './tags-harness.js';

/** Source entries in the read shape, as the sources module would return them (exact Integers as bigint). */
export function entry(id: string, lastUpdated: string, props: Array<[string, PropertyDataType | null, ReadValue, string?]>): SourceEntry {
  const properties: ReadItem[] = props.map(([pid, type, value, language]) => ({
    id: pid,
    value,
    type,
    delimiter: type === 'List' || type === 'LocalizedList' ? ',' : null,
    lastUpdated,
    language: language ?? null,
  }));
  return { id, properties, lastUpdated };
}

export function product(
  id: string,
  o: { titleEn: string; titleDa: string; color: string; price: number; stock: number; released: string; tags: string[]; active: boolean; updated: string },
): SourceEntry {
  return entry(id, o.updated, [
    ['title', 'LocalizedText', o.titleEn, 'en'],
    ['title', 'LocalizedText', o.titleDa, 'da'],
    ['color', 'Text', o.color],
    ['price', 'Decimal', o.price],
    ['stock', 'Integer', o.stock],
    ['released', 'Timestamp', o.released],
    ['tags', 'List', o.tags],
    ['active', 'Boolean', o.active],
  ]);
}

/** Ten products with values spread so every operator has something to tell apart. */
export function catalogue(): SourceEntry[] {
  const colors = ['red', 'blue', 'green', 'red', 'blue', 'red', 'black', 'white', 'red', 'blue'];
  return colors.map((color, i) =>
    product(`p${String(i).padStart(2, '0')}`, {
      titleEn: `${['Summer', 'Winter'][i % 2]} shirt ${i}`,
      titleDa: `${['Sommer', 'Vinter'][i % 2]} skjorte ${i}`,
      color,
      price: 10 + i * 2.5,
      stock: i * 10,
      released: `2024-0${1 + (i % 9)}-15T12:00:00.000Z`,
      tags: i % 3 === 0 ? ['sale', 'new'] : i % 3 === 1 ? ['sale'] : ['new'],
      active: i % 2 === 0,
      updated: `2024-05-${String(10 + i).padStart(2, '0')}T08:00:00.000Z`,
    }),
  );
}

export interface DestinationHarness extends Harness {
  sources: Map<string, SourceEntry[]>;
  apps: Map<string, { secret: string; tenant: string }>;
  clock: { nowMs: number };
  seed(body: Record<string, unknown>): Promise<{ customer: string; destination: string; apiVersionId: string }>;
  /** Seeds a fresh destination over a fresh source; returns the base path of its endpoints. */
  fresh(entries: SourceEntry[], overrides?: Record<string, unknown>): Promise<{ base: string; apiVersionId: string; destination: string; tenant: string }>;
}

export async function startDestinationHarness(extra: Partial<DestinationDeps> = {}): Promise<DestinationHarness> {
  const sources = new Map<string, SourceEntry[]>();
  const apps = new Map<string, { secret: string; tenant: string }>();
  const clock = { nowMs: Date.parse('2025-01-01T00:00:00Z') };
  const h = await startHarness((ctx) =>
    registerDestinationRoutes(ctx, {
      readSourceEntries: (tenant, sourceId) => sources.get(`${tenant}/${sourceId}`) ?? [],
      verifyApplication: (clientId, secret) => {
        const app = apps.get(clientId);
        return app && app.secret === secret ? { tenant: app.tenant } : undefined;
      },
      nowMs: () => clock.nowMs,
      ...extra,
    }),
  );
  const seed = async (body: Record<string, unknown>) => {
    const res = await fetch(`${h.baseUrl}/_emulator/destinations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`seed failed ${res.status}: ${await res.text()}`);
    return (await res.json()) as { customer: string; destination: string; apiVersionId: string };
  };
  return {
    ...h,
    sources,
    apps,
    clock,
    seed,
    async fresh(entries, overrides = {}) {
      const tenant = `t-${randomUUID()}`;
      const sourceId = `s-${randomUUID()}`;
      const destination = `d-${randomUUID()}`;
      sources.set(`${tenant}/${sourceId}`, entries);
      const seeded = await seed({
        customer: 'acme',
        destination,
        sourceId,
        tenant,
        languages: ['en', 'da'],
        endpoints: [
          {
            name: 'products',
            facets: [
              { propertyId: 'color', size: 3, header: { en: 'Colour', da: 'Farve' } },
              { propertyId: 'tags', size: 10 },
            ],
          },
        ],
        ...overrides,
      });
      return { base: `${h.baseUrl}/acme/${destination}/v1`, apiVersionId: seeded.apiVersionId, destination, tenant };
    },
  };
}
