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
export * from "./core/store/ports/activity.js"
export * from "./core/store/ports/catalog.js"
export * from "./core/store/ports/connections.js"
export * from "./core/store/ports/ingestions.js"
export * from "./core/store/ports/metrics.js"
export * from "./core/store/ports/sources.js"
export * as MemoryStore from "./core/store/memory.js"
export * as SqlStore from "./core/store/sql.js"
