export {
  registerLegacyImportRoutes,
  LEGACY_IMPORT_SCOPES,
  DEFAULT_IMPORT_REQUESTS_PER_MINUTE,
  type LegacyImportDeps,
  type LegacyImportAccepted,
  type LegacyImportVerified,
} from './routes.js';
export { validateLegacyImport, type LegacyImportEntry, type LegacyImportRequest } from './validate.js';
