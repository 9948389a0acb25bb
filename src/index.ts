/**
 * tributary: move records into the Data Ingestion Service, effectively once.
 *
 * @since 0.1.0
 */
export * from "./api/index.js"
export * from "./client/index.js"
export * from "./server/index.js"
export * as Records from "./records.js"
export * as Timezones from "./timezones.js"
