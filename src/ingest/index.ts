/**
 * Typed source ingest rules (spec: "Typed source ingest"), shared by the emulator (which enforces
 * them) and the client (which checks a batch before sending it). Pure code, no HTTP.
 */
export { validateTypedIngest } from './validate.js';
export { parseJsonExact, stringifyJsonExact } from './exact-json.js';
export { decodeAtRest, serializeAtRest, valueProblem, isInt64, listDelimiter, type DecodedValue, type ReadValue } from './values.js';
export { isIso8601Timestamp } from './timestamp.js';
export { typedIngestRequestSchema, requestPath, PROPERTY_ID_JSON_SCHEMA } from './schema.js';
export {
  DEFAULT_LIST_DELIMITER,
  INT64_MAX,
  INT64_MIN,
  MAX_DELIMITER_LENGTH,
  PROPERTY_DATA_TYPES,
  RESERVED_PROPERTY_IDS,
  RESERVED_PROPERTY_PREFIXES,
  canonicalLanguage,
  canonicalPropertyId,
  delimiterProblem,
  entryKey,
  isListType,
  isLocalizedType,
  isPropertyDataType,
  isReservedPropertyId,
  languageProblem,
  propertyIdProblem,
} from './rules.js';
export {
  DEFAULT_INGEST_LIMITS,
  type ConfiguredProperties,
  type ConfiguredProperty,
  type IngestErrors,
  type IngestLimits,
  type IngestMeasurements,
  type IngestPlan,
  type IngestValidation,
  type IngestValue,
  type PlannedEntry,
  type PlannedProperty,
} from './types.js';
