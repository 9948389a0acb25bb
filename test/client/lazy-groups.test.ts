import { describe, expect, it } from "@effect/vitest"
import { FetchHttpClient, HttpApiClient } from "@effect/platform"
import { Context, Effect, Layer, Redacted } from "effect"
import { V1Api } from "../../src/api/v1.js"
import { V2Api } from "../../src/api/v2/index.js"
import { TributaryClient } from "../../src/client/index.js"
import { json, scriptedServer } from "../support/http.js"

// The typed clients build each group when it is first read (`lazyClient` in Client.ts): the
// client must look and answer exactly as one built whole by `HttpApiClient.make`.

const clientOf = (url: string) =>
  Layer.build(TributaryClient.layer({ baseUrl: url, apiKey: Redacted.make("k") })).pipe(
    Effect.map(Context.get(TributaryClient))
  )

/** Group name -> its endpoint names, sorted. */
const shape = (client: Record<string, unknown>) =>
  Object.fromEntries(
    Object.keys(client).sort().map((group) => [group, Object.keys(client[group] as object).sort()])
  )

describe("the typed clients' groups, built when first used", () => {
  it.scoped("have the groups and endpoints of a client built whole, and each group is built once", () =>
    Effect.gen(function*() {
      const client = yield* clientOf("http://127.0.0.1:9")
      // Nothing is built until a group is read: each group is still an accessor.
      const unbuilt = Object.keys(client.v2).filter((group) => Object.getOwnPropertyDescriptor(client.v2, group)?.get !== undefined)
      expect(unbuilt).toEqual(Object.keys(client.v2))
      const whole = {
        v1: yield* HttpApiClient.make(V1Api, { baseUrl: "http://127.0.0.1:9" }),
        v2: yield* HttpApiClient.make(V2Api, { baseUrl: "http://127.0.0.1:9" })
      }
      expect(Object.keys(client.v2).length).toBeGreaterThan(10)
      expect(shape(client.v1)).toEqual(shape(whole.v1))
      expect(shape(client.v2)).toEqual(shape(whole.v2))
      // Read twice: the same group object, not a second build; once read, it is a plain value.
      expect(client.v2.v2Datasets).toBe(client.v2.v2Datasets)
      expect(Object.getOwnPropertyDescriptor(client.v2, "v2Datasets")?.get).toBeUndefined()
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.scopedLive("a group read first in a call answers as a typed call does: the key sent, the answer decoded", () =>
    Effect.gen(function*() {
      const keys: Array<string | undefined> = []
      const server = yield* scriptedServer(() => (arrival, res) => {
        keys.push(arrival.headers["x-api-key"] as string | undefined)
        json(res, 200, {
          requestId: "r",
          status: "success",
          data: { items: [{ id: "id", displayName: "id", dataType: "string", order: 0, visible: true }], primaryKey: ["id"] }
        })
      })
      const client = yield* clientOf(server.url)
      const answer = yield* client.v2.v2Datasets.getSchema({ path: { id: 7 } })
      expect(answer.data.primaryKey).toEqual(["id"])
      expect(answer.data.items.map((column) => column.id)).toEqual(["id"])
      expect(keys).toEqual(["k"])
    }))
})
