/**
 * tributary: move records into the Data Ingestion Service, effectively once.
 *
 * First the plain async API (`createClient`: Promise methods over the whole API, jobs, a
 * buffered writer, `Error` subclasses), for code that does not use Effect; then the pipeline
 * (`run`, `events`, sources, `Checkpoint`, `DeadLetter`, `Typed`, the stages) and the typed
 * client it sends with, for code that does. The reference server is `tributary/server`, the
 * API contract `tributary/api`, the connectors `tributary/connectors/{ndjson,kafka,postgres}`,
 * OpenTelemetry `tributary/telemetry`. Importing the root loads neither `pg` nor `kafkajs`.
 *
 * @since 0.1.0
 */
export * from "./plain/index.js"
export * from "./pipeline/index.js"
export * from "./client/index.js"
export * as Records from "./records.js"
export * as Timezones from "./server/core/timezones.js"
