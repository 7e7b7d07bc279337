export { registerDestinationRoutes, type DestinationDeps, type DestinationsModule } from './routes.js';
export type { DestinationConfig, EndpointConfig, EndpointFacet, EndpointProperty } from './registry.js';
export { DESTINATION_TOKEN_SECONDS, TOKEN_REQUESTS_PER_HOUR } from './tokens.js';
export type { DestinationQueryResponse } from './query/run.js';
