export { registerManagedTagRoutes, type ManagedTagDeps, type ManagedTagsModule } from './routes.js';
export type { ManagedTag, ManagedTagType, CardDefinition } from './store.js';
export { DEFAULT_TAG_PAGE_SIZE, MAX_TAG_PAGE_SIZE } from './list-query.js';
