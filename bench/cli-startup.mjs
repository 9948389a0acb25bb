// Start-up of the `tributary` command: wall time of `--version`, a usage error and `--help`,
// against a bare `node -e 0` measured in the same rounds (the machine's floor), as medians and
// ratios. Usage: npm run build && node bench/cli-startup.mjs [--rounds 15] [--bin path/to/bin/tributary.js, to compare another build]
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const binAt = process.argv.indexOf("--bin")
const bin = binAt === -1 ? fileURLToPath(new URL("../bin/tributary.js", import.meta.url)) : process.argv[binAt + 1]
const at = process.argv.indexOf("--rounds")
const rounds = at === -1 ? 15 : Number(process.argv[at + 1])
const cases = {
  "node -e 0 (floor)": ["-e", "0"],
  "tributary --version": [bin, "--version"],
  "tributary ingest (usage error)": [bin, "ingest", "--dataset", "2"],
  "tributary ingest --help": [bin, "ingest", "--help"]
}
const times = Object.fromEntries(Object.keys(cases).map((name) => [name, []]))
for (let round = 0; round < rounds; round++) {
  for (const [name, args] of Object.entries(cases)) {
    const started = process.hrtime.bigint()
    spawnSync(process.execPath, args, { stdio: "ignore" })
    times[name].push(Number(process.hrtime.bigint() - started) / 1e6)
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const floor = median(times["node -e 0 (floor)"])
for (const [name, xs] of Object.entries(times)) {
  console.log(`${name.padEnd(32)} median ${median(xs).toFixed(0).padStart(5)} ms  min ${Math.min(...xs).toFixed(0).padStart(5)} ms  ${(median(xs) / floor).toFixed(2)}x node's floor`)
}
