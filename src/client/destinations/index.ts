export { createDestinationClient, type DestinationClient, type DestinationClientOptions } from './client.js';
export { DestinationTokenProvider, destinationTokenRefreshAfterMs, type DestinationTokenOptions } from './token-provider.js';
export {
  formatDestinationDateTime,
  toGetQuery,
  toPostBody,
  type DestinationFacet,
  type DestinationGetQuery,
  type DestinationPostQuery,
  type DestinationQueryBase,
  type DestinationQueryResponse,
  type DestinationResult,
  type DestinationResultMeta,
  type FilterCriteria,
  type FilterOperator,
  type FilterQuery,
  type FilterValue,
} from './query.js';
