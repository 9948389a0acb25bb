// Bundles the command line (`dist/src/cli/main.js`, compiled by tsc) into `dist/bundle/cli/`:
// one module for the front door and one chunk per command and per shared part, loaded as the
// command needs them. `bin/tributary.js` runs the bundle; the library (`dist/src`) is unchanged.
//
// Why: Node spends most of a command's start resolving, reading and linking modules one by one.
// `tributary ingest` loaded 678 modules (effect 258, fast-check 223 through effect/Schema,
// @effect/platform 64) and sent its first record 545 ms after start on a quiet 2-core machine
// (goal 500 ms; 2.6 s at load 5). Bundled, the same work is a few files: 334 ms against 558 ms
// for the modules, same quiet machine, interleaved.
// bench/cli-first-record.mjs measures it; docs/decisions.md, "Command line", has the figures.
//
// Left out of the bundle: packages that are CommonJS, do not use Effect, and are loaded only by
// the commands that need them (Kafka, Postgres, Prometheus, undici), so they stay the installed
// copies; everything that imports `effect` is inside, so there is one copy of Effect.
import { build } from "esbuild"
import { rmSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const outdir = `${root}dist/bundle/cli`

rmSync(outdir, { recursive: true, force: true })
await build({
  absWorkingDir: root,
  entryPoints: ["dist/src/cli/main.js"],
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Depth kept: dist/bundle/cli is as deep as dist/src/cli, so the paths the commands compute
  // from their own location (the demo's sample, the console's files) hold for both.
  chunkNames: "[name]-[hash]",
  external: ["kafkajs", "pg", "pg-cursor", "pg-native", "prom-client", "undici", "@opentelemetry/*"],
  minifySyntax: true,
  minifyWhitespace: true,
  // Names are not kept: esbuild's `keepNames` wraps every function and class it emits in a
  // `__name(fn, "name")` call that runs each time the function is made, and the server makes
  // closures per request. Measured (a `tributary serve` under 16 connections of 100-record
  // ingests, 3 alternating rounds of 10 s): 447-464 µs of CPU a request without, 522-571 with;
  // `tributary ingest` of 1M records into a raw server: 8.3-8.5 s of CPU against 9.0-10.4.
  // Nothing prints a function's name: errors carry their tag as their name (Effect's tagged
  // errors), and esbuild renames only what collides across modules.
  keepNames: false,
  legalComments: "none",
  logLevel: "warning",
  // Bundled CommonJS code calls `require` for node's own modules.
  banner: { js: "import { createRequire as __tributaryRequire } from \"node:module\"; const require = __tributaryRequire(import.meta.url);" }
})
