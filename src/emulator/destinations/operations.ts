import * as z from 'zod';
import type { OperationSpec } from '../openapi/operation.js';
import { answer, pathParameter, problem, rateLimited, validation } from '../openapi/responses.js';
import {
  DESTINATION_GET_QUERY,
  DestinationQueryRequestSchema,
  DestinationQueryResponseSchema,
  DestinationSeededSchema,
  DestinationSeedSchema,
  DestinationTokenRequestSchema,
  DestinationTokenSchema,
  OpenApiDocumentSchema,
} from './schemas.js';

/** Declarations of the destination routes (routes.ts): seeding, token, description, queries. */

export const JSON_UTF8 = { 'content-type': 'application/json; charset=utf-8' };

const address = {
  customer: pathParameter('Customer of the destination.', 'acme'),
  destination: pathParameter('Destination name.', 'shop'),
};
const unknownDestination = problem('No such destination (or endpoint).');
const queryErrors = {
  '400': validation('A bad parameter, an unknown property, operator or language; messages keyed by parameter path.'),
  '404': unknownDestination,
};

export const SEED: OperationSpec = {
  method: 'POST',
  path: '/_emulator/destinations',
  operationId: 'seedDestination',
  summary: 'Create (or replace) a destination query API over a source.',
  tag: 'Emulator only',
  security: { kind: 'none' },
  requestBody: {
    schema: DestinationSeedSchema,
    example: { customer: 'acme', destination: 'shop', sourceId: 'products', endpoints: [{ name: 'products', facets: [{ propertyId: 'color', size: 10 }] }] },
  },
  responses: {
    '201': answer('Where it answers, and its API version ID (the audience of issuer tokens for it).', DestinationSeededSchema),
    '400': validation('Bad input; messages keyed by path.'),
  },
};

export const TOKEN: OperationSpec = {
  method: 'POST',
  path: '/destinations/{destinationId}/token',
  operationId: 'issueDestinationToken',
  summary: 'Issue a destination token from the credentials of a registered application.',
  description: 'At `{destinations_url}` in the platform. Valid for 24 hours, reusable.',
  tag: 'Destinations',
  security: { kind: 'none' },
  pathParameters: { destinationId: pathParameter('Destination name, or its API version ID (required when two customers use the name).', 'shop') },
  requestBody: { schema: DestinationTokenRequestSchema, example: { clientId: 'dev-client', clientSecret: 'dev-secret' } },
  responses: {
    '200': answer('The token.', DestinationTokenSchema, { accessToken: 'dst_...', expiresIn: 86400 }),
    '400': problem('A missing `clientId` or `clientSecret` (`errors` keyed by field), or a name several customers use.'),
    '401': problem('Unknown client or wrong secret.'),
    '403': problem('The application does not belong to the tenant of the destination.'),
    '404': unknownDestination,
    '429': rateLimited('More than 100 token requests within an hour for the application (or an injected fault).'),
  },
};

export const DESCRIPTION: OperationSpec = {
  method: 'GET',
  path: '/{customer}/{destination}/v1/openapi',
  operationId: 'getDestinationOpenApi',
  summary: "The destination's own OpenAPI 3.1 description: its endpoints and the property types of each.",
  description: 'At `{global_url}` in the platform.',
  tag: 'Destinations',
  security: { kind: 'destination' },
  pathParameters: address,
  responses: { '200': answer('The description.', OpenApiDocumentSchema), '404': unknownDestination },
};

const endpointAddress = { ...address, endpoint: pathParameter('Endpoint name.', 'products') };
const queryAnswer = answer('One page of results.', DestinationQueryResponseSchema, { language: 'en', total: 1, results: [{ id: 'p1', name: 'Kettle' }] });

export const destinationQuery = {
  path: '/{customer}/{destination}/v1/{endpoint}',
  description:
    'At `{global_url}` in the platform. Every parameter is optional; without parameters the first 50 results are returned. `Accept-Encoding: gzip` compresses the answer.',
  tag: 'Destinations',
  security: { kind: 'destination' },
  pathParameters: endpointAddress,
  responses: { '200': queryAnswer, ...queryErrors },
} as const;

export const QUERY_GET: OperationSpec = {
  ...destinationQuery,
  method: 'GET',
  operationId: 'queryDestinationGet',
  summary: 'Query a destination endpoint, parameters in the query string.',
  query: DESTINATION_GET_QUERY,
  freeformQuery: {
    name: 'filters',
    description: 'Any other parameter is an Equal filter on the property of that name: different properties AND, a repeated one OR.',
    schema: z.array(z.string()),
  },
};

export const QUERY_POST: OperationSpec = {
  ...destinationQuery,
  method: 'POST',
  operationId: 'queryDestinationPost',
  summary: 'Query a destination endpoint, parameters in a JSON body (`filter` with `must`/`must_not` and range operators).',
  requestBody: {
    schema: DestinationQueryRequestSchema,
    required: false,
    example: {
      filter: [{ must: { color: ['red', 'blue'], price: { operator: 'LessThan', values: [50] } } }],
      sortDesc: ['price'],
      includeTotals: true,
      top: 10,
    },
  },
};
