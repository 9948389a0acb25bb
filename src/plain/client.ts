/**
 * The plain client: every operation of the typed client (v1 and v2) as a method that
 * answers a Promise, the jobs, and the buffered writer, on one runtime.
 *
 * Each operation takes the typed client's request object (`path`, `urlParams`, `payload`,
 * `headers`, all optional where the operation has none) plus a `signal`; `headers` may be
 * left out (an `Idempotency-Key` is made for every call that takes one, and kept across its
 * retries) or carry the caller's own key. It answers the decoded body, or rejects with an
 * `ApiError` / `ConnectionError`.
 *
 * The operations are read from the API definitions, not written out: a new operation of the
 * contract is a method here at once, with its types.
 *
 * @since 0.3.0
 */
import type { HttpClientResponse } from "@effect/platform/HttpClientResponse"
import { Effect, Option, ParseResult, Schema } from "effect"
import { V1Api } from "../api/v1.js"
import { V2Api } from "../api/v2/index.js"
import { TributaryClient, type TributaryClientService } from "../client/Client.js"
import type { Progress } from "../pipeline/events.js"
import { InvalidRequest } from "./errors.js"
import { backfill, type BackfillOptions, ingest, type IngestOptions, sink, type SinkOptions } from "./jobs.js"
import { type ClientOptions, makeRunner } from "./runtime.js"
import { makeWriter, type Writer, type WriterOptions } from "./writer.js"

/**
 * What every call takes besides its request.
 *
 * @since 0.3.0
 * @category models
 */
export interface CallOptions {
  /** Aborts the call (and its retries): it rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined
}

/**
 * A typed client's method as a Promise method.
 *
 * @since 0.3.0
 * @category models
 */
export type PlainMethod<F> = F extends (request: infer Q) => Effect.Effect<infer A, any, any>
  ? void extends Q ? (request?: CallOptions) => Promise<Exclude<A, readonly [any, HttpClientResponse]>>
  : (
    request:
      & Omit<Q, "withResponse" | "headers">
      & ("headers" extends keyof Q ? { readonly headers?: Q["headers"] | undefined } : unknown)
      & CallOptions
  ) => Promise<Exclude<A, readonly [any, HttpClientResponse]>>
  : never

/**
 * A typed client (its groups of methods) as Promise methods.
 *
 * @since 0.3.0
 * @category models
 */
export type PlainApi<Client> = {
  readonly [Group in keyof Client]: { readonly [Method in keyof Client[Group]]: PlainMethod<Client[Group][Method]> }
}

/**
 * @since 0.3.0
 * @category models
 */
export interface Tributary {
  readonly v1: PlainApi<TributaryClientService["v1"]>
  readonly v2: PlainApi<TributaryClientService["v2"]>
  /** Sends an NDJSON file, a Readable, an AsyncIterable or an array into a dataset. */
  ingest<A = any, B = A>(options: IngestOptions<A, B>): Promise<Progress>
  /** Moves Kafka topics into a dataset until `signal` aborts. */
  sink<A = any, B = A>(options: SinkOptions<A, B>): Promise<Progress>
  /** Backfills a Postgres table or query into a dataset. */
  backfill(options: BackfillOptions): Promise<Progress>
  /** A buffered writer for records made one at a time. */
  writer<A = any, B = A>(options: WriterOptions<A, B>): Writer<A>
  /** Releases the connections (after the jobs and writers ended); the client cannot be used after. */
  close(): Promise<void>
}

/** What the plain client reads of an endpoint: the schemas of the parts of its request. */
interface EndpointParts {
  readonly pathSchema: Option.Option<Schema.Schema<any, any, never>>
  readonly urlParamsSchema: Option.Option<Schema.Schema<any, any, never>>
  readonly payloadSchema: Option.Option<Schema.Schema<any, any, never>>
}

type ApiDefinition = { readonly groups: Readonly<Record<string, { readonly endpoints: Readonly<Record<string, EndpointParts>> }>> }

/** Group and operation names of an API definition, with each operation's request schemas. */
const operationsOf = (api: ApiDefinition) =>
  Object.entries(api.groups).map(([group, definition]) => [group, Object.entries(definition.endpoints)] as const)

/**
 * Checks a request against its operation's schemas before it is sent: a caller without a
 * compiler learns that a field is wrong as an `InvalidRequestError` naming it, not as a
 * failure to read an answer.
 */
const checkRequest = (endpoint: EndpointParts, request: Record<string, unknown>) =>
  Effect.forEach(
    [["path", endpoint.pathSchema], ["urlParams", endpoint.urlParamsSchema], ["payload", endpoint.payloadSchema]] as const,
    ([part, schema]) =>
      Option.isNone(schema) ? Effect.void : Effect.mapError(
        Schema.encodeUnknown(schema.value)(request[part]),
        (error) => new InvalidRequest({ reason: `${part}: ${ParseResult.TreeFormatter.formatErrorSync(error)}` })
      ),
    { discard: true }
  )

/**
 * Makes a plain client.
 *
 * ```js
 * import { createClient } from "tributary-ingest"
 * const tributary = createClient({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.TRIBUTARY_API_KEY })
 * const { data } = await tributary.v2.v2Datasets.get({ path: { id: 42 } })
 * await tributary.close()
 * ```
 *
 * @since 0.3.0
 * @category constructors
 */
export const createClient = (options: ClientOptions): Tributary => {
  const runner = makeRunner(options)
  const plainApi = (version: "v1" | "v2", api: ApiDefinition) =>
    Object.fromEntries(operationsOf(api).map(([group, operations]) => [
      group,
      Object.fromEntries(operations.map(([operation, endpoint]) => [
        operation,
        (request: ({ readonly signal?: AbortSignal; readonly headers?: unknown } & Record<string, unknown>) | undefined) => {
          const { signal, ...rest } = request ?? {}
          return runner.call(
            Effect.zipRight(
              checkRequest(endpoint, rest),
              Effect.flatMap(TributaryClient, (client) => {
                const method = (client[version] as any)[group][operation] as (request: unknown) => Effect.Effect<unknown, unknown>
                return method({ ...rest, headers: rest.headers ?? {} })
              })
            ),
            signal
          )
        }
      ]))
    ]))
  return {
    v1: plainApi("v1", V1Api as any) as any,
    v2: plainApi("v2", V2Api as any) as any,
    ingest: (jobOptions) => ingest(runner, jobOptions),
    sink: (jobOptions) => sink(runner, jobOptions),
    backfill: (jobOptions) => backfill(runner, jobOptions),
    writer: (writerOptions) => makeWriter(runner, writerOptions),
    close: () => runner.runtime.dispose()
  }
}
