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
    // The files of a project share one process: loading Effect, the server and the CLI's
    // modules afresh for each of ~100 files cost about a second a file on the 2-core machine
    // (test/server on the memory store: 120-141 s isolated, 82-84 s shared). Each file still
    // stops what it starts; the setup file undoes what @effect/vitest's `layer` leaves on `it`.
    // One worker (the default on 2 cores): two caused timing failures.
    setupFiles: ["test/setup/effect-vitest.ts"],
    isolate: false,
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
