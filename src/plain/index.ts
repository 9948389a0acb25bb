/**
 * The plain async API, for JavaScript and TypeScript without Effect: a client whose methods
 * answer Promises (every operation of v1 and v2), jobs (`ingest`, `sink`, `backfill`) with
 * progress callbacks and an `AbortSignal`, a buffered writer, and errors that are `Error`s.
 *
 * ```js
 * import { createClient } from "tributary-ingest"
 * const tributary = createClient({ baseUrl, apiKey })
 * const progress = await tributary.ingest({ from: "orders.ndjson", dataset: 42 })
 * ```
 *
 * @since 0.3.0
 */
export { type CallOptions, createClient, type PlainApi, type PlainMethod, type Tributary } from "./client.js"
export { ApiError, ConnectionError, type ErrorDetail, InvalidRequestError, JobError, TributaryError } from "./errors.js"
export { type BackfillOptions, type IngestOptions, type JobOptions, type SinkOptions, type TypedOptions } from "./jobs.js"
export type { ClientOptions } from "./runtime.js"
export { type Input, InputError } from "./sources.js"
export type { Writer, WriterOptions } from "./writer.js"
