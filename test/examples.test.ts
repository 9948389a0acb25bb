import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { serverLayer, ServerUrl } from "./support/server.js"

const run = promisify(execFile)

/** Runs an example as a user would (`npx tsx examples/NAME.ts`) against the server. */
const runExample = (name: string, url: string, apiKey: string) =>
  Effect.promise(() =>
    run(process.execPath, ["--import", "tsx", `examples/${name}.ts`], {
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
})
