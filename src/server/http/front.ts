/**
 * node's server with the checks every request body gets, in front of the API.
 *
 * A request with a body is read here, once, whatever route it is for, and refused with the
 * envelope when the server will not take it: over the size limit (413, also for a chunked
 * body, which declares no length), not `application/json` (415), not UTF-8 (400
 * `invalid_encoding`), nested deeper than `MaxJsonDepth` (400 `nesting_too_deep`; per record
 * in an ingest body). These checks come before the key and the route, like the declared-length
 * check always did: a body the server will not read is refused whatever it is for.
 *
 * What passes goes on to the ingest route (when one is set) or to the API, which reads the
 * same bytes from a replay of the request. Requests without a body go straight on.
 *
 * The server also gives the envelope to what node answers itself: headers over node's limit
 * (431), a request not received within the timeout (408: a body that stops half way holds
 * nothing for longer), and a request that is not HTTP (400).
 *
 * @since 0.1.0
 */
import { isUtf8 } from "node:buffer"
import { type IncomingMessage, Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Socket } from "node:net"
import { Readable } from "node:stream"
import { statusOf, type WireError, wireErrorOf } from "../../api/errors.js"
import { MaxJsonDepth, tooDeepRecordJson } from "../../records.js"
import { newRequestId } from "./envelope.js"
import { type DeepRecord, scanDepth } from "./jsonDepth.js"

/**
 * The ingest route's side of the front: which requests it takes, and serving one with its
 * checked body.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestRoute {
  readonly takes: (request: IncomingMessage) => boolean
  readonly serve: (
    request: IncomingMessage,
    response: ServerResponse,
    /** Checked, records nested too deep already cut out. */
    body: Buffer
  ) => void
}

/**
 * A read served in front of the API (`fastIngestion.ts`): which bodiless requests it takes,
 * and serving one.
 *
 * @since 0.3.0
 * @category models
 */
export interface ReadRoute {
  readonly takes: (request: IncomingMessage) => boolean
  readonly serve: (request: IncomingMessage, response: ServerResponse) => void
}

/**
 * @since 0.1.0
 * @category models
 */
export interface FrontOptions {
  readonly maxBodyBytes: number
  /** Time to receive a whole request, headers and body. */
  readonly requestTimeoutMillis: number
}

/** The JSON an error answer carries, and its status. */
const errorAnswer = (error: WireError) => {
  const { _tag, ...body } = error
  return { status: statusOf[_tag], text: JSON.stringify(body) }
}

/**
 * Sends `body` as JSON; `close` ends the connection after it (the rest of a body is not read).
 *
 * @since 0.1.0
 * @category utils
 */
export const sendJson = (
  response: ServerResponse,
  status: number,
  text: string,
  headers?: Readonly<Record<string, string>>
) => {
  if (response.headersSent || response.destroyed) return
  response.writeHead(status, {
    ...headers,
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text)
  })
  response.end(text)
}

/**
 * Sends a wire error with the envelope; with `close`, the connection ends after it (the rest
 * of a body is not read).
 *
 * @since 0.1.0
 * @category utils
 */
export const sendWireError = (response: ServerResponse, error: WireError, close = false) => {
  const { status, text } = errorAnswer(error)
  response.setHeader("x-request-id", error.requestId)
  sendJson(response, status, text, close ? { connection: "close" } : undefined)
}

const refuse = (
  response: ServerResponse,
  tag: WireError["_tag"],
  problem: { readonly code: string; readonly message: string; readonly field?: string | null },
  close = false
) => sendWireError(response, wireErrorOf(tag, newRequestId(), problem), close)

/**
 * 413. A body whose declared length is over the limit is left to node, which reads and drops
 * the rest so that the client sees the answer (a client still writing gets EPIPE from a closed
 * connection) and the connection stays usable; the request timeout bounds how long. A chunked
 * body has no end to wait for: the connection is closed.
 */
const tooLarge = (response: ServerResponse, detail: string, close: boolean) =>
  refuse(response, "PayloadTooLarge", { code: "payload_too_large", message: `the request body is over the size limit${detail}` }, close)

const bodiless = new Set(["GET", "HEAD", "OPTIONS"])

/** `application/json`, with or without parameters (`; charset=utf-8`), in any case. */
const isJsonType = (contentType: string) => contentType.split(";", 1)[0]!.trim().toLowerCase() === "application/json"

/** The request again, its body replayed from `body`, for a listener that reads it as a stream. */
const replay = (request: IncomingMessage, body: Buffer): IncomingMessage =>
  Object.assign(Readable.from(body.length === 0 ? [] : [body]), {
    url: request.url,
    method: request.method,
    headers: request.headers,
    rawHeaders: request.rawHeaders,
    httpVersion: request.httpVersion,
    socket: request.socket,
    connection: request.socket
  }) as unknown as IncomingMessage

/**
 * @since 0.1.0
 * @category models
 */
export class FrontServer extends Server {
  /** Set once the API's services are up; until then ingest requests go to the API. */
  ingestRoute: IngestRoute | undefined = undefined
  /** Set with the ingest route: the reads served in front of the API. */
  readRoute: ReadRoute | undefined = undefined

  /**
   * Requests that arrived before the API was attached. The port is bound first and the API's
   * handler attached once its layers are built (a few hundred milliseconds at start-up); node
   * drops a request that nobody listens for, and its client waited forever. They wait here
   * instead and are handed over, in order, as soon as the handler is there.
   */
  private early: Array<readonly [IncomingMessage, ServerResponse]> | undefined = []

  constructor(private readonly options: FrontOptions) {
    super({
      requestTimeout: options.requestTimeoutMillis,
      headersTimeout: Math.min(options.requestTimeoutMillis, 60_000),
      // How often node looks for requests past their timeout (its default is 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, options.requestTimeoutMillis / 4))
    })
    this.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => this.clientError(error, socket))
    this.on("newListener", (event: string | symbol) => {
      if (event !== "request" || this.early === undefined) return
      const early = this.early
      this.early = undefined
      // `newListener` comes before the listener is added: hand over once it is.
      if (early.length > 0) queueMicrotask(() => early.forEach(([request, response]) => this.toApi(request, response)))
    })
  }

  override emit(event: string, ...args: Array<any>): boolean {
    if (event !== "request") return super.emit(event, ...args)
    this.front(args[0] as IncomingMessage, args[1] as ServerResponse)
    return true
  }

  private toApi(request: IncomingMessage, response: ServerResponse) {
    if (this.early !== undefined) this.early.push([request, response])
    else super.emit("request", request, response)
  }

  private front(request: IncomingMessage, response: ServerResponse) {
    const headers = request.headers
    const declared = headers["content-length"]
    const hasBody = headers["transfer-encoding"] !== undefined || (declared !== undefined && declared !== "0")
    if (!hasBody && this.readRoute?.takes(request) === true) return this.readRoute.serve(request, response)
    if (bodiless.has(request.method ?? "") || (!hasBody && this.ingestRoute?.takes(request) !== true)) {
      return this.toApi(request, response)
    }
    if (hasBody) {
      const maxBytes = this.options.maxBodyBytes
      if (declared !== undefined && Number(declared) > maxBytes) {
        return tooLarge(response, ` (${declared} bytes; the limit is ${maxBytes})`, false)
      }
      const contentType = headers["content-type"]
      if (contentType === undefined || !isJsonType(contentType)) {
        return refuse(response, "UnsupportedMediaType", {
          code: "unsupported_media_type",
          message: contentType === undefined
            ? "a request body must be sent with Content-Type: application/json"
            : `a request body must be application/json, not ${JSON.stringify(contentType.slice(0, 100))}`
        })
      }
    }
    readBody(request, this.options.maxBodyBytes, (body) => {
      if (body === undefined) return
      if (body === "too large") return tooLarge(response, "", true)
      this.checked(request, response, body)
    })
  }

  private checked(request: IncomingMessage, response: ServerResponse, body: Buffer) {
    if (!isUtf8(body)) {
      return refuse(response, "BadRequest", {
        code: "invalid_encoding",
        field: null,
        message: "the request body is not valid UTF-8"
      })
    }
    const ingest = this.ingestRoute?.takes(request) === true ? this.ingestRoute : undefined
    const scan = scanDepth(body, { records: request.method === "POST" && ingestTarget(request.url ?? "") !== undefined })
    if (scan._tag === "TooDeep") {
      return refuse(response, "BadRequest", {
        code: "nesting_too_deep",
        field: null,
        message: `the request body nests deeper than ${MaxJsonDepth} levels (at byte ${scan.offset})`
      })
    }
    // Records nested too deep are cut out here, for the ingest route and the API alike.
    const checked = scan.deepRecords.length === 0 ? body : cutOut(body, scan.deepRecords)
    if (ingest !== undefined) return ingest.serve(request, response, checked)
    this.toApi(replay(request, checked), response)
  }

  /** node's own refusals, with the envelope. */
  private clientError(error: NodeJS.ErrnoException, socket: Socket) {
    if (!socket.writable || socket.bytesWritten > 0 || error.code === "ECONNRESET") return void socket.destroy()
    const id = newRequestId()
    const wire = error.code === "HPE_HEADER_OVERFLOW"
      ? wireErrorOf("HeadersTooLarge", id, { code: "headers_too_large", message: "the request headers are over the size limit" })
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? wireErrorOf("RequestTimeout", id, {
        code: "request_timeout",
        message: `the request was not received within ${this.options.requestTimeoutMillis} ms`
      })
      : wireErrorOf("BadRequest", id, { code: "bad_request", field: null, message: "the request is not valid HTTP" })
    const { status, text } = errorAnswer(wire)
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${
        Buffer.byteLength(text)
      }\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n${text}`
    )
  }
}

/** `body` with each deep record replaced by its stand-in (`tooDeepRecordJson`). */
const cutOut = (body: Buffer, deepRecords: ReadonlyArray<DeepRecord>): Buffer => {
  const pieces: Array<Buffer> = []
  let from = 0
  for (const deep of deepRecords) {
    pieces.push(body.subarray(from, deep.start), Buffer.from(tooDeepRecordJson(deep.start)))
    from = deep.end
  }
  pieces.push(body.subarray(from))
  return Buffer.concat(pieces)
}

/**
 * `POST /v1|v2/datasets/{id}/data`: the version, the raw id segment, and whether a query
 * string follows. Ingest bodies are judged per record even when the API serves them.
 *
 * @since 0.1.0
 * @category utils
 */
export const ingestTarget = (url: string) => {
  const match = /^\/(v[12])\/datasets\/([^/?]+)\/data(\?|$)/.exec(url)
  return match === null ? undefined : { version: match[1] as "v1" | "v2", id: match[2]!, query: match[3] === "?" }
}

/**
 * Reads a body up to `maxBytes`: the bytes, `"too large"` (nothing more is read), or undefined
 * when the client went away.
 */
const readBody = (request: IncomingMessage, maxBytes: number, done: (body: Buffer | "too large" | undefined) => void) => {
  const chunks: Array<Buffer> = []
  let size = 0
  const finish = (body: Buffer | "too large" | undefined) => {
    request.off("data", onData)
    request.off("end", onEnd)
    request.off("error", onGone)
    request.off("aborted", onGone)
    done(body)
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size <= maxBytes) return void chunks.push(chunk)
    request.pause()
    finish("too large")
  }
  const onEnd = () => finish(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size))
  const onGone = () => finish(undefined)
  request.on("data", onData)
  request.on("end", onEnd)
  request.on("error", onGone)
  request.on("aborted", onGone)
}
