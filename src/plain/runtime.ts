/**
 * The one runtime behind a plain client: its typed client (one undici agent, one retry
 * policy, one `Retry-After` pause for every call), the platform's Node services and, when
 * asked, the telemetry exporter. Every Promise of the plain API is an Effect run on it, with
 * the caller's `AbortSignal`, its failure turned into a plain `Error` after the caller's await.
 *
 * @since 0.3.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Effect, Exit, Layer, ManagedRuntime, Redacted } from "effect"
import { type ClientConfig, TributaryClient } from "../client/Client.js"
import type { RetryPolicy } from "../client/retry.js"
import { layer as telemetryLayer, type TelemetryOptions } from "../telemetry/index.js"
import { toError } from "./errors.js"

/**
 * What a plain client is made with.
 *
 * @since 0.3.0
 * @category models
 */
export interface ClientOptions {
  /** The service's address, e.g. `https://api.example.com` or a reference server's URL. */
  readonly baseUrl: string
  readonly apiKey: string
  /** Retries of a failed request (transport errors, timeouts, 408, 429, 5xx); default 8. */
  readonly maxRetries?: number | undefined
  /** The rest of the retry policy (backoff, attempt timeout). */
  readonly retry?: Partial<RetryPolicy> | undefined
  /** Traces and metrics over OTLP/HTTP (see `tributary/telemetry`); none by default. */
  readonly telemetry?: TelemetryOptions | undefined
}

/**
 * The services every plain call runs with.
 *
 * @since 0.3.0
 * @category models
 */
export type Services = TributaryClient | FileSystem.FileSystem | NodeContext.NodeContext

/**
 * A plain client's runtime, and how a call runs on it.
 *
 * @since 0.3.0
 * @category models
 */
export interface Runner {
  readonly runtime: ManagedRuntime.ManagedRuntime<Services, never>
  /** Runs `effect`; rejects with a plain error, or with the signal's reason when it was aborted. */
  readonly call: <A>(effect: Effect.Effect<A, unknown, Services>, signal?: AbortSignal | undefined) => Promise<A>
}

/**
 * @since 0.3.0
 * @category constructors
 */
export const makeRunner = (options: ClientOptions): Runner => {
  if (typeof options.baseUrl !== "string" || typeof options.apiKey !== "string") {
    throw new TypeError("createClient needs { baseUrl, apiKey } as strings")
  }
  if (!URL.canParse(options.baseUrl)) throw new TypeError(`createClient: baseUrl ${JSON.stringify(options.baseUrl)} is not a URL`)
  const config: ClientConfig = {
    baseUrl: options.baseUrl,
    apiKey: Redacted.make(options.apiKey),
    retry: { ...options.retry, ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }) },
    // Traced, every request is a span of its batch and carries `traceparent` to the service.
    traceRequests: options.telemetry !== undefined
  }
  const layer = Layer.mergeAll(TributaryClient.layer(config), NodeContext.layer).pipe(
    Layer.provideMerge(options.telemetry === undefined ? Layer.empty : telemetryLayer(options.telemetry))
  )
  const runtime = ManagedRuntime.make(layer)
  const call = async <A>(effect: Effect.Effect<A, unknown, Services>, signal?: AbortSignal | undefined): Promise<A> => {
    if (signal?.aborted === true) throw signal.reason
    const exit = await runtime.runPromiseExit(effect, signal === undefined ? undefined : { signal })
    if (Exit.isSuccess(exit)) return exit.value
    throw toError(exit.cause, signal)
  }
  return { runtime, call }
}
