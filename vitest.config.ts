import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/setup/services.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
