/**
 * An OTLP/HTTP (JSON) receiver on loopback: a Node HTTP server that keeps what arrives,
 * decoded, per signal. The telemetry tests export to it as they would to a collector.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

type Attributes = ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>

export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: Attributes
  readonly events?: ReadonlyArray<{ readonly name: string; readonly attributes: Attributes }>
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes?: Attributes }>
  readonly service: string
}

/** One data point of a metric as it arrived: its attributes and its value. */
export interface Point {
  readonly name: string
  readonly service: string
  readonly attributes: Record<string, unknown>
  readonly value: number
}

export interface Receiver {
  readonly url: string
  readonly spans: Array<Span>
  /** The names of the metrics that arrived, once per export. */
  readonly metrics: Array<string>
  readonly points: Array<Point>
  /**
   * Waits (up to `timeoutMs`, default 10 s) until `arrived` holds of the spans received. A
   * test waits for the spans it reads before it closes what exports them: closing interrupts
   * an export under way, and @effect/opentelemetry's exporter loses what that export held (it
   * already took the spans from its buffer), so a span ended within an export interval of
   * the close can be lost.
   */
  readonly spansArrived: (arrived: (spans: ReadonlyArray<Span>) => boolean, timeoutMs?: number) => Promise<void>
  readonly close: () => void
}

const flat = (attributes: Attributes | undefined): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]))

export const receiver = async (): Promise<Receiver> => {
  const spans: Array<Span> = []
  const metrics: Array<string> = []
  const points: Array<Point> = []
  const server = createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      const payload = JSON.parse(body)
      if (req.url === "/v1/traces") {
        for (const resource of payload.resourceSpans ?? []) {
          const service = String(flat(resource.resource.attributes)["service.name"])
          for (const scope of resource.scopeSpans ?? []) for (const span of scope.spans ?? []) spans.push({ ...span, service })
        }
      }
      if (req.url === "/v1/metrics") {
        for (const resource of payload.resourceMetrics ?? []) {
          const service = String(flat(resource.resource.attributes)["service.name"])
          for (const scope of resource.scopeMetrics ?? []) {
            for (const metric of scope.metrics ?? []) {
              metrics.push(metric.name)
              const data = metric.sum ?? metric.gauge ?? metric.histogram ?? {}
              for (const point of data.dataPoints ?? []) {
                points.push({
                  name: metric.name,
                  service,
                  attributes: flat(point.attributes),
                  value: Number(point.asInt ?? point.asDouble ?? point.sum ?? NaN)
                })
              }
            }
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const spansArrived = async (arrived: (spans: ReadonlyArray<Span>) => boolean, timeoutMs = 10_000) => {
    for (let waited = 0; waited < timeoutMs && !arrived(spans); waited += 25) await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, metrics, points, spansArrived, close: () => server.close() }
}

/** A span's (or an event's) attribute, as its value. */
export const attribute = (span: { readonly attributes?: Attributes | undefined }, key: string) => flat(span.attributes)[key]

/** The latest value that arrived of a metric, with the given attributes. */
export const latest = (points: ReadonlyArray<Point>, name: string, where: Record<string, unknown> = {}): number | undefined =>
  points.filter((p) => p.name === name && Object.entries(where).every(([k, v]) => p.attributes[k] === v)).at(-1)?.value
