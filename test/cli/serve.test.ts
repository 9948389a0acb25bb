import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, startServe, type RunningServer } from "../support/cli.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-serve-"))
const writeJson = (name: string, value: unknown) => {
  const path = join(dir, name)
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value))
  return path
}

const get = async (url: string, key?: string) => {
  const response = await fetch(url, key === undefined ? {} : { headers: { "x-api-key": key } })
  const text = await response.text()
  return { status: response.status, text, body: text.startsWith("{") ? JSON.parse(text) : undefined, headers: response.headers }
}

describe("tributary serve --port 0 --api-key KEY", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServe(["--port", "0", "--api-key", "test-key"])
  })
  afterAll(() => server.stop())

  it("prints its URL (with the picked port) and the key", () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(server.url).not.toMatch(/:0$/)
    expect(server.output()).toContain("API key test-key")
    expect(server.output()).toContain("GET /v1/auth/validate-key -> 200")
  })

  it("prints the web console's URL, which serves the console from the package with its CSP", async () => {
    expect(server.output()).toContain(`console ${server.url}/console (sign in with an API key)`)
    const page = await get(`${server.url}/console`)
    expect(page.status).toBe(200)
    expect(page.text).toContain("<title>tributary console</title>")
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
    for (const asset of ["app.js", "console.css", "vendor/preact-htm.js"]) {
      expect((await get(`${server.url}/console/${asset}`)).status, asset).toBe(200)
    }
    // A server without faults says none.
    expect(page.headers.get("x-tributary-faults")).toBeNull()
  })

  it("answers validate-key 200 with the key and 401 without, both with requestId", async () => {
    const valid = await get(`${server.url}/v1/auth/validate-key`, "test-key")
    expect(valid.status).toBe(200)
    expect(valid.body).toMatchObject({ status: "success", requestId: expect.any(String) })
    expect(valid.headers.get("x-request-id")).toBe(valid.body.requestId)
    const missing = await get(`${server.url}/v1/auth/validate-key`)
    expect(missing.status).toBe(401)
    expect(missing.body).toMatchObject({ status: "error", requestId: expect.any(String), errors: [{ code: "unauthorized" }] })
    const v2 = await get(`${server.url}/v2/auth/validate-key`, "test-key")
    expect(v2.status).toBe(200)
    expect(v2.body.data.valid).toBe(true)
  })

  it("serves a valid OpenAPI 3.x document covering both versions, and a docs page", async () => {
    const spec = await get(`${server.url}/openapi.json`)
    expect(spec.status).toBe(200)
    expect(spec.body.openapi).toMatch(/^3\./)
    const validator = new Validator()
    const result = await validator.validate(spec.body)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    const paths = Object.keys(spec.body.paths)
    expect(paths).toContain("/v1/datasets/{datasetId}/data")
    expect(paths).toContain("/v2/auth/validate-key")
    for (const path of ["/v2/organization", "/v2/organization/activity-log", "/v2/organization/usage", "/v2/organization/countries",
      "/v2/organization/metadata-options", "/v2/accounts", "/v2/accounts/{id}", "/v2/users", "/v2/users/{id}", "/v2/profile",
      "/v2/profile/metadata-options", "/v2/billing", "/v2/billing/invoices"]) expect(paths).toContain(path)
    expect(JSON.stringify(spec.body)).not.toContain("HttpApiDecodeError")
    const docs = await get(`${server.url}/docs`)
    expect(docs.status).toBe(200)
    expect(docs.text).toContain("<html")
  })

  it("answers unknown routes 404 and oversized bodies 413 with the envelope", async () => {
    const unknown = await get(`${server.url}/v3/nothing`, "test-key")
    expect(unknown.status).toBe(404)
    expect(unknown.body).toMatchObject({ status: "error", errors: [{ code: "not_found" }] })
    const response = await fetch(`${server.url}/v1/data-sources`, {
      method: "POST",
      headers: { "x-api-key": "test-key", "content-type": "application/json" },
      body: JSON.stringify({ title: "x".repeat(11 * 1024 * 1024) })
    })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ status: "error", errors: [{ code: "payload_too_large" }] })
  })
})

describe("tributary serve start-up", () => {
  it("generates and prints a working key when none is given", async () => {
    const server = await startServe(["--port", "0"])
    try {
      const key = /API key (trb_[0-9a-f]{32})/.exec(server.output())?.[1]
      expect(key).toBeDefined()
      expect((await get(`${server.url}/v1/auth/validate-key`, key)).status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  it("stops on SIGTERM or Ctrl-C with exit 0: that is how a server ends", async () => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const server = await startServe(["--port", "0"])
      const closed = new Promise<number | null>((resolve) => server.child.on("close", resolve))
      server.child.kill(signal)
      expect(await closed).toBe(0)
    }
  })

  it("loads a seed file: its keys work with their roles", async () => {
    const seed = writeJson("seed.json", {
      organizations: [{
        name: "Acme",
        accounts: [{ name: "Acme", accountType: "organization" }],
        users: [
          { name: "Ada", email: "ada@acme.test", role: "admin", apiKeys: ["acme-admin-key"] },
          { name: "Vic", email: "vic@acme.test", role: "viewer", apiKeys: ["acme-viewer-key"] }
        ]
      }]
    })
    const server = await startServe(["--port", "0", "--seed", seed])
    try {
      expect((await get(`${server.url}/v1/auth/validate-key`, "acme-admin-key")).status).toBe(200)
      const forbidden = await fetch(`${server.url}/v1/data-sources`, {
        method: "POST",
        headers: { "x-api-key": "acme-viewer-key", "content-type": "application/json" },
        body: JSON.stringify({ title: "x" })
      })
      expect(forbidden.status).toBe(403)
    } finally {
      await server.stop()
    }
  })

  it("stops with a clear message naming the path when the seed has an unknown field", async () => {
    const seed = writeJson("typo.json", {
      organizations: [{
        name: "Acme",
        accounts: [{ name: "Acme", accountType: "organization" }],
        users: [{ name: "Ada", email: "a@a", role: "admin", apiKeys: ["k"], nickname: "A" }]
      }]
    })
    const result = await runCli(["serve", "--port", "0", "--seed", seed])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("organizations[0].users[0].nickname")
    expect(result.stderr.trim().split("\n")).toHaveLength(1)
  })

  it("stops with a clear message when the seed is not JSON or has a bad role", async () => {
    const broken = await runCli(["serve", "--port", "0", "--seed", writeJson("broken.json", "{ not json")])
    expect(broken.code).toBe(1)
    expect(broken.stderr).toMatch(/Invalid seed file .*broken\.json: not valid JSON/)
    const role = writeJson("role.json", {
      organizations: [{ name: "A", accounts: [{ name: "A", accountType: "organization" }], users: [{ name: "B", email: "b", role: "owner", apiKeys: ["k"] }] }]
    })
    const badRole = await runCli(["serve", "--port", "0", "--seed", role])
    expect(badRole.code).toBe(1)
    expect(badRole.stderr).toContain("organizations[0].users[0].role")
  })

  it("stops naming the path when the seed's plan, limits or invoices are wrong", async () => {
    const seed = writeJson("limits.json", {
      organizations: [{
        name: "A",
        accounts: [{ name: "A", accountType: "organization" }],
        users: [],
        plan: { name: "Pro", status: "active", billingPeriod: "weekly" },
        limits: { users: -1 },
        invoices: [{ amount: "ten", status: "paid" }]
      }]
    })
    const result = await runCli(["serve", "--port", "0", "--seed", seed])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("organizations[0].plan.billingPeriod")
    expect(result.stderr).toContain("organizations[0].limits.users")
    expect(result.stderr).toContain("organizations[0].invoices[0].amount")
  })

  it("exits 2 on a usage error", async () => {
    const result = await runCli(["serve", "--port", "not-a-number"])
    expect(result.code).toBe(2)
    const missing = await runCli(["serve", "--seed", join(dir, "does-not-exist.json")])
    expect(missing.code).toBe(2)
  })
})
