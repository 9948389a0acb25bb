import { defineConfig } from "vitest/config"

/** The suites that talk to a reference server: run once per store. */
const serverSuites = [
  "test/server/v1.test.ts",
  "test/server/v2.test.ts",
  "test/server/v2-dataset-settings.test.ts",
  "test/server/v2-modifications.test.ts",
  "test/server/v2-metrics.test.ts",
  "test/server/v2-properties.test.ts",
  "test/server/v2-organization.test.ts",
  "test/server/cli-found.test.ts",
  "test/server/faults.test.ts",
  "test/server/ingest-route.test.ts",
  "test/server/ingestion-trace.test.ts",
  "test/server/hostile.test.ts",
  "test/client/pagination.test.ts",
  "test/pipeline/pipeline.test.ts",
  "test/console/console.test.ts"
]

export default defineConfig({
  test: {
    globalSetup: ["test/setup/services.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      // Everything, with the reference servers on the memory store.
      { extends: true, test: { name: "memory", include: ["test/**/*.test.ts"] } },
      // The server suites again, with the reference servers on the Postgres store.
      { extends: true, test: { name: "postgres", include: serverSuites, env: { TRIBUTARY_TEST_STORE: "postgres" } } }
    ]
  }
})
