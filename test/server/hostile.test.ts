/**
 * The reference server under hostile and careless input: one test per defect found by probing
 * it, each reproduced the way it was found (real HTTP on loopback) and asserting the decided
 * behaviour (docs/decisions.md, "Hostile input").
 */
import { connect } from "node:net"
import { request as httpRequest } from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { MaxJsonDepth } from "../../src/records.js"
import { pollUntil, requestTo, serverLayer, ServerUrl } from "../support/server.js"

type Answer = Effect.Effect.Success<ReturnType<typeof requestTo>>

const send = requestTo

const json = (key: string, body: unknown, method = "POST"): RequestInit => ({
  method,
  headers: { "x-api-key": key, "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

const get = (key: string): RequestInit => ({ headers: { "x-api-key": key } })

/** The answer is the error envelope with `code` (and its request id in the header). */
const expectError = (answer: Answer, status: number, code: string) => {
  expect({ status: answer.status, code: answer.body?.errors?.[0]?.code }).toEqual({ status, code })
  expect(answer.body).toMatchObject({ status: "error", requestId: expect.any(String) })
  expect(answer.headers.get("x-request-id")).toBe(answer.body.requestId)
}

const urlOf = (layer: Layer.Layer<ServerUrl, unknown>) => Effect.map(Layer.build(layer), (context) => Context.get(context, ServerUrl))

/** A v1 data source and a dataset keyed by `id`, made by `key`. */
const shop = (url: string, key = "acme-admin") =>
  Effect.gen(function*() {
    const source = yield* send(url, "/v1/data-sources", json(key, { title: "Shop" }))
    const dataset = yield* send(url, "/v1/datasets", json(key, { title: "Orders", dataSourceId: source.body.id, primaryKeys: ["id"] }))
    return { dataSourceId: source.body.id as number, datasetId: dataset.body.id as string }
  })

const settled = (url: string, datasetId: string) =>
  pollUntil(
    send(url, `/v2/datasets/${datasetId}/ingestions?pageSize=100`, get("acme-admin")),
    (a) => a.body.data.items.every((i: { status: string }) => i.status !== "queued" && i.status !== "processing")
  )

const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

describe("hostile input", () => {
  it.scopedLive("1. private resources are hidden from v1 lists; nobody deletes or purges what they cannot see", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const { dataSourceId, datasetId } = yield* shop(url)
      expect((yield* send(url, `/v2/datasets/${datasetId}/permissions`, json("acme-admin", { accessLevel: "private" }, "PUT"))).status).toBe(200)
      const listed = yield* send(url, `/v1/data-sources/${dataSourceId}/datasets`, get("acme-viewer"))
      expect(listed.status).toBe(200)
      expect(JSON.stringify(listed.body)).not.toContain(datasetId)
      expect(JSON.stringify((yield* send(url, `/v1/data-sources/${dataSourceId}/datasets`, get("acme-admin"))).body)).toContain(datasetId)
      // The editor sees the data source but not the private dataset in it: it may not destroy it.
      expectError(yield* send(url, `/v1/data-sources/${dataSourceId}`, { method: "DELETE", headers: { "x-api-key": "acme-editor" } }), 403, "forbidden")
      expectError(yield* send(url, `/v2/data-sources/${dataSourceId}/purge`, { method: "POST", headers: { "x-api-key": "acme-editor" } }), 403, "forbidden")
      expect((yield* send(url, `/v2/datasets/${datasetId}`, get("acme-admin"))).status).toBe(200)
      // A private data source is gone from the account's v1 list for the viewer.
      expect((yield* send(url, `/v2/data-sources/${dataSourceId}/permissions`, json("acme-admin", { accessLevel: "private" }, "PUT"))).status).toBe(200)
      const accounts = yield* send(url, "/v1/accounts", get("acme-viewer"))
      const sources = yield* send(url, `/v1/accounts/${accounts.body.accounts[0].id}/data-sources`, get("acme-viewer"))
      expect(sources.status).toBe(200)
      expect(JSON.stringify(sources.body)).not.toContain(`"id":${dataSourceId},`)
      // The admin may.
      expect((yield* send(url, `/v1/data-sources/${dataSourceId}`, { method: "DELETE", headers: { "x-api-key": "acme-admin" } })).status).toBe(200)
    }))

  it.scopedLive.each([
    { via: "served", options: {} },
    { via: "through the API (faults on)", options: { faults: {} } }
  ])("2, 3. a record nested too deep is rejected alone ($via); the ingestion and its detail stay readable", ({ options }) =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer(options))
      const { datasetId } = yield* shop(url)
      const good = Array.from({ length: 98 }, (_, i) => JSON.stringify({ id: `r${i}`, amount: i }))
      const body = `{"records":[${[...good.slice(0, 40), `{"id":"deep","v":${nested(5_000)}}`, ...good.slice(40), `{"id":"just-too-deep","v":${nested(MaxJsonDepth)}}`].join(",")}]}`
      const accepted = yield* send(url, `/v2/datasets/${datasetId}/data`, json("acme-editor", body))
      expect(accepted.status).toBe(200)
      yield* settled(url, datasetId)
      const detail = yield* send(url, `/v2/datasets/${datasetId}/ingestions/${accepted.body.data.ingestionId}`, get("acme-admin"))
      expect(detail.status).toBe(200)
      expect(detail.body.data.status).toBe("success")
      expect(detail.body.data.summary.ingestion).toMatchObject({ receivedRecordCount: 100, appendedRecordCount: 98, rejectedRecordCount: 2 })
      expect(detail.body.data.errors.map((e: { code: string }) => e.code)).toEqual(["nesting_too_deep", "nesting_too_deep"])
      const rows = yield* send(url, `/v2/datasets/${datasetId}/data?pageSize=100`, get("acme-admin"))
      expect(rows.body.data.items).toHaveLength(98)
      // One level less is merely an unsupported value.
      const shallow = yield* send(url, `/v1/datasets/${datasetId}/data`, json("acme-editor", `{"records":[{"id":"x","v":${nested(MaxJsonDepth - 1)}}]}`))
      yield* settled(url, datasetId)
      const shallowDetail = yield* send(url, `/v1/datasets/${datasetId}/ingestions/${shallow.body.ingestionId}`, get("acme-admin"))
      expect(shallowDetail.body.errors.map((e: { code: string }) => e.code)).toEqual(["unsupported_value"])
    }), { timeout: 30_000 })

  it.scopedLive("4. a body nested deeper than the limit is 400 nesting_too_deep, never a 500", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      for (const levels of [MaxJsonDepth + 1, 3_000, 1_000_000]) {
        expectError(yield* send(url, "/v1/data-sources", json("acme-admin", `{"title":${nested(levels)}}`)), 400, "nesting_too_deep")
        expectError(yield* send(url, "/v2/data-sources", json("acme-admin", `{"name":"x","metadata":${nested(levels)}}`)), 400, "nesting_too_deep")
      }
      // Within the limit, the usual validation answers.
      expectError(yield* send(url, "/v1/data-sources", json("acme-admin", `{"title":${nested(MaxJsonDepth - 1)}}`)), 400, "invalid_input")
    }))

  it.scopedLive("5. a chunked body over the limit is 413 with the envelope on every route", () =>
    Effect.gen(function*() {
      const url = new URL(yield* urlOf(serverLayer({ maxBodyBytes: 1024 })))
      for (const path of ["/v1/data-sources", "/v2/data-sources", "/v1/datasets"]) {
        const answer = yield* Effect.promise(() =>
          new Promise<{ status: number; body: any }>((resolve, reject) => {
            const req = httpRequest({
              host: url.hostname,
              port: url.port,
              method: "POST",
              path,
              headers: { "x-api-key": "acme-admin", "content-type": "application/json", "transfer-encoding": "chunked" }
            }, (res) => {
              let text = ""
              res.on("data", (chunk) => (text += chunk))
              res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }))
            })
            req.on("error", (error) => (error as NodeJS.ErrnoException).code === "EPIPE" ? undefined : reject(error))
            req.write(`{"title":"${"x".repeat(2048)}`)
            req.end("\"}")
          })
        )
        expect({ path, status: answer.status, code: answer.body.errors[0].code }).toEqual({ path, status: 413, code: "payload_too_large" })
      }
      const sources = yield* send(url.origin, "/v2/data-sources", get("acme-admin"))
      expect(sources.body.data.items).toEqual([])
    }))

  it.scopedLive("6. integer ids in paths have one spelling: 01, 0x1, 1e3, +1 and %201 name nothing", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const { dataSourceId } = yield* shop(url)
      expect(dataSourceId).toBe(1)
      for (const id of ["01", "0x1", "1e3", "+1", "%201", "1.0", "-1", "0", "99999999999999999999"]) {
        const v1 = yield* send(url, `/v1/data-sources/${id}`, { method: "DELETE", headers: { "x-api-key": "acme-admin" } })
        expectError(v1, 400, "invalid_input")
        expect(v1.body.errors[0].field).toBe("dataSourceId")
        expectError(yield* send(url, `/v2/data-sources/${id}`, get("acme-admin")), 404, "not_found")
      }
      expect((yield* send(url, "/v2/data-sources/1", get("acme-admin"))).status).toBe(200)
    }))

  it.scopedLive("7. a body must be application/json: anything else is 415 and creates nothing", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const cases: ReadonlyArray<Record<string, string>> = [
        { "content-type": "application/x-www-form-urlencoded" },
        { "content-type": "text/plain" },
        { "content-type": "application/jsonx" },
        {}
      ]
      for (const headers of cases) {
        const answer = yield* send(url, "/v1/data-sources", { method: "POST", headers: { "x-api-key": "acme-admin", ...headers }, body: "title=Shop" })
        expectError(answer, 415, "unsupported_media_type")
        const asJson = yield* send(url, "/v2/data-sources", { method: "POST", headers: { "x-api-key": "acme-admin", ...headers }, body: "{\"name\":\"Shop\"}" })
        expectError(asJson, 415, "unsupported_media_type")
      }
      // Parameters and case do not matter.
      const charset = yield* send(url, "/v1/data-sources", {
        method: "POST",
        headers: { "x-api-key": "acme-admin", "content-type": "Application/JSON; charset=utf-8" },
        body: "{\"title\":\"Shop\"}"
      })
      expect(charset.status).toBe(200)
      const sources = yield* send(url, "/v2/data-sources", get("acme-admin"))
      expect(sources.body.data.items.map((s: { name: string }) => s.name)).toEqual(["Shop"])
    }))

  it.scopedLive("8. text is checked: invalid UTF-8 is 400 invalid_encoding, control characters in names are 400", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const invalid = Buffer.concat([Buffer.from("{\"title\":\"Sh"), Buffer.from([0xc3, 0x28]), Buffer.from("op\"}")])
      expectError(yield* send(url, "/v1/data-sources", { ...json("acme-admin", ""), body: invalid }), 400, "invalid_encoding")
      const nul = yield* send(url, "/v1/data-sources", json("acme-admin", { title: "Sh\u0000op" }))
      expectError(nul, 400, "invalid_input")
      expect(nul.body.errors[0].field).toBe("title")
      const v2 = yield* send(url, "/v2/data-sources", json("acme-admin", { name: "Shop\u001b[2J" }))
      expectError(v2, 400, "invalid_input")
      expect(v2.body.errors[0].field).toBe("name")
      expect((yield* send(url, "/v2/data-sources", get("acme-admin"))).body.data.items).toEqual([])
    }))

  it.scopedLive("9. errors do not echo unbounded input", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const huge = "Europe/" + "x".repeat(1_000_000)
      for (const [path, body] of [["/v1/data-sources", { title: "Shop", timezone: huge }], ["/v2/data-sources", { name: "Shop", timezone: huge }], ["/v2/data-sources", { name: huge }]] as const) {
        const answer = yield* send(url, path, json("acme-admin", body))
        expect(answer.status).toBe(400)
        expect(answer.text.length).toBeLessThan(2_000)
      }
    }))

  it.scopedLive("10. v1, like v2, rejects a non-object record alone", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      const { datasetId } = yield* shop(url)
      const accepted = yield* send(url, `/v1/datasets/${datasetId}/data`, json("acme-editor", "{\"records\":[{\"id\":\"a\"},null,7]}"))
      expect(accepted.status).toBe(200)
      yield* settled(url, datasetId)
      const detail = yield* send(url, `/v1/datasets/${datasetId}/ingestions/${accepted.body.ingestionId}`, get("acme-admin"))
      expect(detail.body.metrics.ingestionMetrics).toMatchObject({ appendedRecordsCount: 1, rejectedRecordsCount: 2 })
      expect(detail.body.errors.map((e: { code: string }) => e.code)).toEqual(["not_an_object", "not_an_object"])
    }))

  it.scopedLive("11. an unknown sortBy is 400", () =>
    Effect.gen(function*() {
      const url = yield* urlOf(serverLayer())
      expectError(yield* send(url, "/v2/data-sources?sortBy=nope", get("acme-admin")), 400, "invalid_input")
      expectError(yield* send(url, "/v2/datasets?sortBy=nope", get("acme-admin")), 400, "invalid_input")
    }))

  it.scopedLive("12. oversized headers get 431 with the envelope; a body that stops half way gets 408 after the timeout", () =>
    Effect.gen(function*() {
      const url = new URL(yield* urlOf(serverLayer({ requestTimeoutMillis: 400 })))
      expectError(
        yield* send(url.origin, "/v1/data-sources", { headers: { "x-api-key": "acme-admin", "x-padding": "x".repeat(20_000) } }),
        431,
        "headers_too_large"
      )
      const started = Date.now()
      const raw = yield* Effect.promise(() =>
        new Promise<string>((resolve, reject) => {
          const socket = connect(Number(url.port), url.hostname, () => {
            socket.write(
              "POST /v1/data-sources HTTP/1.1\r\nhost: x\r\nx-api-key: acme-admin\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"title\":"
            )
          })
          let text = ""
          socket.on("data", (chunk) => (text += chunk))
          socket.on("close", () => resolve(text))
          socket.on("error", reject)
        })
      )
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(raw).toMatch(/^HTTP\/1.1 408 /)
      const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))
      expect(body).toMatchObject({ status: "error", errors: [{ code: "request_timeout" }] })
      expect(raw.toLowerCase()).toContain(`x-request-id: ${body.requestId}`)
    }))
})
