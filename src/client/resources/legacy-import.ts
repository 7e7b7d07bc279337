import { isIngestRetryable, type CallOptions } from '../sources.js';
import { pathOf, requireId, type Send } from '../transport.js';
import type { LegacyImportAccepted, LegacyImportVerified } from '../../types.js';

export type { LegacyImportAccepted, LegacyImportVerified };

/**
 * Legacy import body. The spec does not show it; this is the shape the emulator accepts: string
 * values (the source's string-at-rest form), `null` clears a property.
 */
export interface LegacyImportRequest {
  entries: Array<{ id: string; properties: Record<string, string | null> }>;
}

/**
 * Legacy import operations (spec: accept `import-datasource` or `write:sources`). A validation
 * failure is ApiError 400 with `problem.errors` keyed by request path.
 */
export class LegacyImportApi {
  constructor(private readonly send: Send) {}

  /** `POST /datasources/{dataSource}/import/verify`: validation only, nothing queued, no rate budget spent. */
  async verify(dataSource: string, request: LegacyImportRequest, options: CallOptions = {}): Promise<LegacyImportVerified> {
    const response = await this.send.send({
      method: 'POST',
      path: pathOf`/datasources/${requireId('dataSource', dataSource)}/import/verify`,
      body: request,
      signal: options.signal,
      retry: true,
    });
    return response.body as LegacyImportVerified;
  }

  /**
   * `POST /datasources/{dataSource}/import` -> 202 queued. Retried on 429 (honouring Retry-After),
   * 5xx and network failures like typed ingest: entries are upserts, so a repeat is harmless.
   */
  async import(dataSource: string, request: LegacyImportRequest, options: CallOptions = {}): Promise<LegacyImportAccepted> {
    const response = await this.send.send({
      method: 'POST',
      path: pathOf`/datasources/${requireId('dataSource', dataSource)}/import`,
      body: request,
      signal: options.signal,
      retry: true,
      retryable: isIngestRetryable,
    });
    return response.body as LegacyImportAccepted;
  }
}
