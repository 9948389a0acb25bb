/**
 * The client a one-shot command (`ingest`, `backfill`, `replay`) talks to the service with.
 *
 * @since 0.3.0
 */
import { Redacted } from "effect"
import { TributaryClient } from "../client/Client.js"
import { retryNotice } from "./progress.js"

/**
 * The client of `--api-url` and `--api-key`: each request retried `--retries` times, every
 * retry told on standard error (`retryNotice`), and requests traced when telemetry is on
 * (`--otlp-endpoint`). `tributary sink` makes its own: it rides out outages instead.
 *
 * @since 0.3.0
 * @category layers
 */
export const commandClient = (options: {
  readonly apiUrl: string
  readonly apiKey: string
  readonly retries: number
  readonly otlpEndpoint?: string | undefined
}) =>
  TributaryClient.layer({
    baseUrl: options.apiUrl,
    apiKey: Redacted.make(options.apiKey),
    retry: { maxRetries: options.retries },
    onRetry: retryNotice(process.stderr),
    traceRequests: options.otlpEndpoint !== undefined
  })
