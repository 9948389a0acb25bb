/**
 * The reference server: the whole API in one process, for development and tests.
 *
 * @since 0.1.0
 */
export * as ReferenceServer from "./http/server.js"
export { type FaultSpec, formatFaults, parseFaults } from "./faults.js"
export { defaultSeed, generateApiKey, loadSeed, Seed, SeedError } from "./seed.js"
export { StoreError } from "./core/errors.js"
export { allStores, type Stores, type StoreService } from "./core/store/Stores.js"
export { allServerStores, type ServerStores, type ServerStoreService } from "./features/stores.js"
export * from "./core/store/ports/catalog.js"
export * from "./core/store/ports/ingestions.js"
export * from "./core/store/ports/sources.js"
export * from "./features/activity/store.js"
export * from "./features/connections/store.js"
export * from "./features/metrics/store.js"
export * as MemoryStore from "./features/memoryStore.js"
export * as SqlStore from "./features/sqlStore.js"
