import { ApiError } from '../errors.js';
import type { CallOptions } from '../sources.js';
import type { Send } from '../transport.js';
import type { AccessCatalogItem } from '../../types.js';

export type { AccessCatalogItem };

/** `GET /v1/applications/access-catalog`: the access options that can be granted to an application (a tree). */
export async function getAccessCatalog(send: Send, options: CallOptions = {}): Promise<AccessCatalogItem[]> {
  const response = await send.send({ method: 'GET', path: '/v1/applications/access-catalog', signal: options.signal, retry: true });
  if (!Array.isArray(response.body)) {
    throw new ApiError({
      status: response.status,
      method: 'GET',
      path: '/v1/applications/access-catalog',
      message: 'the access catalog answer is not an array',
    });
  }
  return response.body as AccessCatalogItem[];
}
