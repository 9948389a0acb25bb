import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { clientFor, serverLayer, ServerUrl } from "./support/server.js"

const run = promisify(execFile)

/** Runs an example as a user would (`npx tsx examples/NAME.ts`) against the server. */
const runExample = (name: string, url: string, apiKey: string, args: ReadonlyArray<string> = []) =>
  Effect.promise(() =>
    run(process.execPath, ["--import", "tsx", `examples/${name}.ts`, ...args], {
      env: { ...process.env, TRIBUTARY_API_URL: url, TRIBUTARY_API_KEY: apiKey },
      timeout: 60_000
    })
  )

layer(serverLayer(), { excludeTestServices: true })("examples run against the reference server", (it) => {
  it.effect("v1-client creates, ingests and reports the metrics", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const { stdout } = yield* runExample("v1-client", url, "acme-admin")
      expect(stdout).toMatch(/ingestion [0-9a-f-]{36}: success/)
      expect(stdout).toContain("appendedRecordsCount: 2")
    }), 60_000)

  it.effect("ndjson-job sends a file through the pipeline and reports", () =>
    Effect.gen(function*() {
      const url = yield* ServerUrl
      const client = yield* clientFor("acme-admin")
      const dataSource = yield* client.v2.v2DataSources.create({ payload: { name: "example" }, headers: {} })
      const dataset = yield* client.v2.v2Datasets.create({
        payload: { name: "lines", dataSourceId: dataSource.data.id, schema: [{ id: "n", dataType: "number" }], primaryKey: ["n"] },
        headers: {}
      })
      const file = join(mkdtempSync(join(tmpdir(), "tributary-example-")), "lines.ndjson")
      writeFileSync(file, "{\"n\":1}\n{\"n\":\"two\"}\n{\"n\":3}\n")
      const { stdout } = yield* runExample("ndjson-job", url, "acme-admin", [file, dataset.data.id])
      expect(stdout).toContain("stored 2 of 3 records; 1 dead letters")
    }), 60_000)
})
