/**
 * The package as a JavaScript user meets it: the plain example runs with `node` (no build
 * step, no Effect), and importing the root loads neither `pg` nor `kafkajs` (nor the CLI, nor
 * the OpenTelemetry exporter), while it leads with the plain API and the pipeline.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverLayer, ServerUrl } from "../support/server.js"

const exec = promisify(execFile)
const server = ManagedRuntime.make(serverLayer())
let url: string

beforeAll(async () => {
  url = await server.runPromise(ServerUrl)
})
afterAll(() => server.dispose())

/** The modules a `node -e` program resolved (the package must be built: `npm run build`). */
const modulesLoadedBy = async (program: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "tributary-loads-")), "loads.json")
  await exec(process.execPath, ["--import", "./test/plain/loads.mjs", "--input-type=module", "-e", program], {
    env: { ...process.env, LOADS_FILE: file }
  })
  return JSON.parse(readFileSync(file, "utf8")) as Array<string>
}

const heavy = /node_modules\/(pg|pg-cursor|kafkajs|@effect\/sql|@effect\/sql-pg|@effect\/cli|@effect\/opentelemetry)\//

describe("the package face", () => {
  it("examples/plain-node.mjs runs from JavaScript against the reference server", async () => {
    const { stdout } = await exec(process.execPath, ["examples/plain-node.mjs", "examples/data/orders.ndjson"], {
      env: { ...process.env, TRIBUTARY_API_URL: url, TRIBUTARY_API_KEY: "acme-admin" },
      timeout: 60_000
    })
    expect(stdout).toContain("ingested 2000 of 2005 records; 5 dead letters")
    expect(stdout).toContain("written 5 records")
    expect(stdout).toMatch(/not found: status 404, code not_found, request [0-9a-f-]{36}/)
  }, 60_000)

  it("the root leads with the plain API and the pipeline, and loads neither pg nor kafkajs", async () => {
    const root = await import("tributary-ingest")
    expect(typeof root.createClient).toBe("function")
    expect(typeof root.run).toBe("function")
    expect(typeof root.ApiError).toBe("function")
    expect("ReferenceServer" in root).toBe(false)

    const loaded = await modulesLoadedBy("await import('tributary-ingest')")
    expect(loaded.some((url) => url.endsWith("/dist/src/plain/index.js"))).toBe(true)
    expect(loaded.filter((url) => heavy.test(url))).toEqual([])
    // The check sees such modules where they are loaded.
    const kafka = await modulesLoadedBy("await import('tributary-ingest/connectors/kafka')")
    expect(kafka.some((url) => url.includes("node_modules/kafkajs/"))).toBe(true)
  }, 60_000)
})
