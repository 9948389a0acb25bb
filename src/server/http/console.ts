/**
 * The web console at `/console`: a handful of static files, and nothing else.
 *
 * The console is a client of the API like any other: the browser signs in with an API key
 * (kept in `sessionStorage`, sent as `x-api-key`, never in a URL) and reads and changes
 * everything through `/v2/...` (and the same ingest route every client uses). So this module
 * serves files only: no route of its own reads the store, and what a key may see or do is
 * exactly what the API lets it.
 *
 * The files ship in the package (`src/server/http/console/`, listed in `files`); the one
 * library, Preact with hooks and htm in a single ES module, is read from the `htm` dependency
 * (`htm/preact/standalone`). Nothing is fetched from elsewhere at run time, and nothing is
 * built: the browser runs the files as they are (docs/decisions.md, "Web console").
 *
 * Every answer carries a Content-Security-Policy that allows scripts, styles and requests
 * from this origin only: no inline script, no `eval`, no framing.
 *
 * @since 0.1.0
 */
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer } from "effect"

/**
 * The console's path; `tributary serve` prints `URL + consolePath`.
 *
 * @since 0.1.0
 * @category defaults
 */
export const consolePath = "/console"

/**
 * The policy of every console answer: this origin only, no inline code, no eval, not framed.
 *
 * @since 0.1.0
 * @category defaults
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** The package's root: the nearest folder above this module with the package's package.json. */
const packageRoot = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const manifest = join(dir, "package.json")
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "tributary-ingest") {
      return dir
    }
    const parent = dirname(dir)
    if (parent === dir) throw new Error("the console's files were not found: no tributary-ingest package.json above " + import.meta.url)
    dir = parent
  }
}

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
}

/**
 * The files, read once: the console's own and the library's module. A fixed list, so a
 * request path never becomes a file path.
 */
const loadAssets = (): ReadonlyMap<string, Asset> => {
  const own = join(packageRoot(), "src", "server", "http", "console")
  // `require` finds htm's CommonJS entry (`dist/htm.js`); the ES module of Preact, its hooks
  // and htm in one file sits in the package's `preact/` folder.
  const library = join(dirname(dirname(createRequire(import.meta.url).resolve("htm"))), "preact", "standalone.module.js")
  const html = { body: readFileSync(join(own, "index.html")), contentType: "text/html; charset=utf-8" }
  const file = (path: string, contentType: string): Asset => ({ body: readFileSync(path), contentType })
  return new Map([
    [consolePath, html],
    [`${consolePath}/`, html],
    [`${consolePath}/app.js`, file(join(own, "app.js"), "text/javascript; charset=utf-8")],
    [`${consolePath}/console.css`, file(join(own, "console.css"), "text/css; charset=utf-8")],
    [`${consolePath}/vendor/preact-htm.js`, file(library, "text/javascript; charset=utf-8")]
  ])
}

const headers = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  // Small files: always asked again, so a new version of the server is seen at once.
  "cache-control": "no-cache"
}

/**
 * The console's routes (`/console`, `/console/...`) on the API's router.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Layer.unwrapEffect(Effect.sync(() => {
  const assets = loadAssets()
  const serve = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const path = request.url.split("?", 1)[0]!
    const asset = assets.get(path)
    return asset === undefined
      ? HttpServerResponse.text("no such console file", { status: 404, headers })
      : HttpServerResponse.uint8Array(asset.body, { contentType: asset.contentType, headers })
  })
  return HttpApiBuilder.Router.use((router) =>
    Effect.all([router.get(consolePath, serve), router.get(`${consolePath}/*`, serve)], { discard: true })
  )
}))
