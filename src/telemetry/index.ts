/**
 * OpenTelemetry: a run's spans and metrics exported over OTLP/HTTP (JSON) to a collector,
 * Jaeger, Grafana Tempo, Honeycomb or Datadog.
 *
 * The exporter is `@effect/opentelemetry`'s `Otlp` module, which speaks OTLP with the
 * platform's HTTP client and needs no OpenTelemetry SDK. It is an optional peer dependency,
 * loaded only when a layer of this module is built: a job without telemetry neither loads nor
 * installs it (`npm install @effect/opentelemetry` to use it).
 *
 * ```ts
 * run(client, config).pipe(Effect.provide(Telemetry.layer({ endpoint: "http://localhost:4318" })))
 * ```
 *
 * @since 0.3.0
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { Duration, Effect, Layer } from "effect"

export * as PipelineMetrics from "./metrics.js"

/**
 * Where and how to export.
 *
 * @since 0.3.0
 * @category models
 */
export interface TelemetryOptions {
  /**
   * The OTLP/HTTP base address (`/v1/traces` and `/v1/metrics` are appended), e.g.
   * `http://localhost:4318`; default `OTEL_EXPORTER_OTLP_ENDPOINT`.
   */
  readonly endpoint?: string | undefined
  /** The `service.name` resource attribute; default `OTEL_SERVICE_NAME`, else `tributary`. */
  readonly serviceName?: string | undefined
  /** Headers for every export (a vendor's API key); default from `OTEL_EXPORTER_OTLP_HEADERS`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** How often spans and metrics are exported (default 5 s; the rest goes out when the layer closes). */
  readonly exportInterval?: Duration.DurationInput | undefined
}

/**
 * The telemetry is asked for, but it cannot be set up (no endpoint, or the exporter is not
 * installed).
 *
 * @since 0.3.0
 * @category errors
 */
export class TelemetryError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "TelemetryError"
  }
}

/**
 * `OTEL_EXPORTER_OTLP_HEADERS` as the specification writes it: `key=value,key2=value2`, each
 * part percent-encoded.
 *
 * @since 0.3.0
 * @category utils
 */
export const parseHeaders = (text: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (text ?? "").split(",").map((part) => part.trim()).filter((part) => part.includes("=")).map((part) => {
      const at = part.indexOf("=")
      return [decodeURIComponent(part.slice(0, at).trim()), decodeURIComponent(part.slice(at + 1).trim())]
    })
  )

/**
 * The options with the standard environment variables filled in where they are not given:
 * undefined when no endpoint is given either way (no telemetry).
 *
 * @since 0.3.0
 * @category utils
 */
export const resolveOptions = (
  options: TelemetryOptions = {},
  env: Readonly<Record<string, string | undefined>> = process.env
): Required<Omit<TelemetryOptions, "exportInterval">> & Pick<TelemetryOptions, "exportInterval"> | undefined => {
  const endpoint = options.endpoint ?? env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (endpoint === undefined || endpoint === "") return undefined
  return {
    endpoint: endpoint.replace(/\/+$/, ""),
    serviceName: options.serviceName ?? env.OTEL_SERVICE_NAME ?? "tributary",
    headers: options.headers ?? parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    exportInterval: options.exportInterval
  }
}

/**
 * Spans (every `Effect.withSpan` of the program: a run's batches and requests) and metrics
 * (every Effect `Metric`: the pipeline's, see `PipelineMetrics`) exported over OTLP/HTTP as
 * JSON. Closing the layer exports what is left. Without an endpoint (given or in
 * `OTEL_EXPORTER_OTLP_ENDPOINT`) it dies with a `TelemetryError`.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: TelemetryOptions = {}): Layer.Layer<never> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const resolved = resolveOptions(options)
    if (resolved === undefined) {
      return yield* Effect.die(new TelemetryError("telemetry needs an OTLP endpoint: give one, or set OTEL_EXPORTER_OTLP_ENDPOINT"))
    }
    const [OtlpTracer, OtlpMetrics, OtlpSerialization] = yield* Effect.tryPromise({
      try: () =>
        Promise.all([
          import("@effect/opentelemetry/OtlpTracer"),
          import("@effect/opentelemetry/OtlpMetrics"),
          import("@effect/opentelemetry/OtlpSerialization")
        ]),
      catch: () =>
        new TelemetryError("telemetry needs the optional package @effect/opentelemetry: npm install @effect/opentelemetry@0.64.1")
    }).pipe(Effect.orDie)
    const resource = { serviceName: resolved.serviceName }
    const interval = resolved.exportInterval ?? "5 seconds"
    const exports = { inFlight: 0 }
    const exporters = Layer.mergeAll(
      OtlpTracer.layer({ url: `${resolved.endpoint}/v1/traces`, resource, headers: resolved.headers, exportInterval: interval }),
      OtlpMetrics.layer({ url: `${resolved.endpoint}/v1/metrics`, resource, headers: resolved.headers, exportInterval: interval })
    ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(countedClient(exports)))
    // Built after the exporters, so closed before them: their close interrupts an export under
    // way, and what that export held (already taken from the exporter's buffer) was lost.
    return Layer.provideMerge(Layer.scopedDiscard(Effect.addFinalizer(() => exportsDone(exports))), exporters)
  }))

/** The HTTP client of the exporters, counting the exports under way. */
const countedClient = (exports: { inFlight: number }) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.transform(client, (request) =>
        Effect.acquireUseRelease(
          Effect.sync(() => exports.inFlight++),
          () => request,
          () => Effect.sync(() => exports.inFlight--)
        )))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * Waits (at most `exportDrainMillis`) until no export is under way: what one holds reaches the
 * collector, and the exporters' own close sends the rest.
 */
const exportsDone = (exports: { readonly inFlight: number }): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let waited = 0; exports.inFlight > 0 && waited < exportDrainMillis; waited += 10) yield* Effect.sleep("10 millis")
  })

/** How long a closing layer waits for exports under way. */
const exportDrainMillis = 5_000

/**
 * `layer` when telemetry is asked for (an endpoint given, or `OTEL_EXPORTER_OTLP_ENDPOINT`
 * set), else nothing: what the CLI commands use.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerIfConfigured = (options: TelemetryOptions = {}): Layer.Layer<never> =>
  resolveOptions(options) === undefined ? Layer.empty : layer(options)
