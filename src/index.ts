/**
 * tributary: move records into the Data Ingestion Service, effectively once.
 *
 * The pipeline first (`run`, `events`, sources, `Checkpoint`, `DeadLetter`, `Typed`, the
 * stages), then the typed client it sends with. The reference server is
 * `tributary/server`, the API contract `tributary/api`, the connectors
 * `tributary/connectors/{ndjson,kafka,postgres}`.
 *
 * @since 0.1.0
 */
export * from "./pipeline/index.js"
export * from "./client/index.js"
export * as Records from "./records.js"
export * as Timezones from "./server/core/timezones.js"
