/**
 * A real reference server on a free loopback port, for tests.
 */
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Redacted } from "effect"
import { defaultRetryPolicy, Transport, TributaryClient, type ClientConfig } from "../../src/client/index.js"
import * as ReferenceServer from "../../src/server/http/server.js"
import type { Seed } from "../../src/server/seed.js"
import { storeLayer, testStoreKind } from "./stores.js"

/** Two organizations: Acme (admin, editor, viewer; two accounts; a board; connections) and Globex (admin). */
export const testSeed: Seed = {
  organizations: [
    {
      name: "Acme",
      accounts: [{ name: "Acme", accountType: "organization" }, { name: "Client Co", accountType: "client" }],
      users: [
        { name: "Ada", email: "ada@acme.test", role: "admin", apiKeys: ["acme-admin"] },
        { name: "Eve", email: "eve@acme.test", role: "editor", apiKeys: ["acme-editor"] },
        { name: "Vic", email: "vic@acme.test", role: "viewer", apiKeys: ["acme-viewer"] }
      ],
      boards: [{ name: "Overview", blocks: [{ name: "Fixtures", metrics: [{ metric: "Fixture metric" }] }] }],
      // Connections have no create route: spares for the suites that delete some.
      connections: [
        { name: "Analytics", integrationKey: "google_analytics4", managedBy: "ada@acme.test", sharedWithAccounts: true },
        { name: "Billing", integrationKey: "stripe", managedBy: "eve@acme.test", accessLevel: "private", status: "error" },
        ...Array.from({ length: 40 }, (_, i) => ({ name: `Spare ${i + 1}`, integrationKey: "hubspot", managedBy: "ada@acme.test" }))
      ]
    },
    {
      name: "Globex",
      accounts: [{ name: "Globex", accountType: "organization" }],
      users: [{ name: "Gus", email: "gus@globex.test", role: "admin", apiKeys: ["globex-admin"] }]
    }
  ]
}

export class ServerUrl extends Context.Tag("test/ServerUrl")<ServerUrl, string>() {}

/**
 * The reference server with `testSeed`; provides its URL and one shared HTTP client. Its store
 * is the one `TRIBUTARY_TEST_STORE` names (memory unless `postgres`), fresh for each layer.
 */
export const serverLayer = (options: Partial<ReferenceServer.ServerOptions> = {}) =>
  Layer.effect(ServerUrl, Effect.map(HttpServer.HttpServer, (server) => ReferenceServer.serverUrl(server.address))).pipe(
    Layer.merge(Transport.layer(defaultRetryPolicy.attemptTimeout)),
    Layer.provide(
      ReferenceServer.layer({
        host: "127.0.0.1",
        port: 0,
        seed: testSeed,
        maxBodyBytes: ReferenceServer.defaultMaxBodyBytes,
        store: storeLayer(testStoreKind()),
        ...options
      })
    )
  )

/** A typed client of the server at `ServerUrl` using `apiKey`. */
export const clientFor = (apiKey: string, retry?: ClientConfig["retry"]) =>
  Effect.flatMap(ServerUrl, (baseUrl) => TributaryClient.make({ baseUrl, apiKey: Redacted.make(apiKey), retry }))

/** A raw answer: status, headers, the text and its parsed JSON body (the text when not JSON). */
export interface RawAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: any
}

/** A raw request to the server at `url`: status, headers, the text and its parsed JSON body. */
export const requestTo = (url: string, path: string, init: RequestInit = {}): Effect.Effect<RawAnswer> =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${path}`, init)
    const text = await response.text()
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
    return { status: response.status, headers: response.headers, text, body }
  })

/** A raw request to the server at `ServerUrl`: status, headers and parsed JSON body. */
export const rawRequest = (path: string, init: RequestInit = {}): Effect.Effect<RawAnswer, never, ServerUrl> =>
  Effect.flatMap(ServerUrl, (url) => requestTo(url, path, init))

/** Runs `get` every 10 ms until `done` holds for its answer. */
export const pollUntil = <A, E>(get: Effect.Effect<A, E>, done: (a: A) => boolean): Effect.Effect<A, E> =>
  Effect.flatMap(get, (a) => done(a) ? Effect.succeed(a) : Effect.zipRight(Effect.sleep("10 millis"), pollUntil(get, done)))

/** Polls an ingestion (v1) until it is no longer `processing`. */
export const awaitIngestionV1 = (client: TributaryClient["Type"], datasetId: string, ingestionId: string) =>
  pollUntil(
    client.v1.v1Datasets.getIngestion({ path: { datasetId, ingestionId } }),
    (detail) => detail.status !== "processing"
  )
