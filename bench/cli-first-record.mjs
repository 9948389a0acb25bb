// Time from starting `tributary ingest` to its first records on the wire: a reference server
// (`tributary serve`) behind a pass-through proxy that notes when the first POST .../data
// arrives; medians over rounds, against the time a bare `node -e 0` takes to run in the same
// rounds. Usage: npm run build && node bench/cli-first-record.mjs [--rounds 7]
// Two variants, interleaved in each round: the command as installed (`bin/tributary.js`, the
// bundle in dist/bundle/cli) and the same command run from tsc's modules (dist/src/cli/main.js),
// which is what the bundle saves.
import { spawn, spawnSync } from "node:child_process"
import { writeFileSync, mkdtempSync } from "node:fs"
import { createServer, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const bin = fileURLToPath(new URL("../bin/tributary.js", import.meta.url))
const variants = { bundle: bin, modules: fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url)) }
const at = process.argv.indexOf("--rounds")
const rounds = at === -1 ? 7 : Number(process.argv[at + 1])
const key = "bench-key"

const server = spawn(process.execPath, [bin, "serve", "--port", "0", "--api-key", key])
const upstream = await new Promise((resolve) => {
  let out = ""
  server.stdout.on("data", (chunk) => {
    out += chunk
    const match = /listening on (http:\/\/[^\s]+)/.exec(out)
    if (match) resolve(new URL(match[1]))
  })
})
let firstPost
const proxy = createServer((req, res) => {
  if (req.method === "POST" && req.url.endsWith("/data") && firstPost !== undefined && firstPost.at === undefined) firstPost.at = performance.now()
  const forward = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers)
    answer.pipe(res)
  })
  req.pipe(forward)
})
await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${proxy.address().port}`
const api = async (path, body) =>
  (await (await fetch(`${upstream.origin}${path}`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body) })).json())
const source = await api("/v2/data-sources", { name: "bench" })
const dir = mkdtempSync(join(tmpdir(), "tributary-first-record-"))
const file = join(dir, "one.ndjson")
writeFileSync(file, "{\"n\":1}\n")

const firsts = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
const floors = []
let made = 0
const firstRecord = async (entry) => {
  const dataset = await api("/v2/datasets", { name: `d${made++}`, dataSourceId: source.data.id, schema: [{ id: "n", dataType: "number" }] })
  firstPost = { at: undefined }
  const started = performance.now()
  await new Promise((resolve) => {
    const child = spawn(process.execPath, [entry, "ingest", file, "--dataset", String(dataset.data.id), "--api-url", url, "--api-key", key, "--restart"], { stdio: "ignore" })
    child.on("close", resolve)
  })
  return firstPost.at - started
}
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? Object.keys(variants) : Object.keys(variants).reverse()
  for (const name of order) firsts[name].push(await firstRecord(variants[name]))
  const floorStart = performance.now()
  spawnSync(process.execPath, ["-e", "0"])
  floors.push(performance.now() - floorStart)
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`node -e 0 (floor): median ${median(floors).toFixed(0)} ms`)
for (const [name, times] of Object.entries(firsts)) {
  console.log(
    `first record on the wire, ${name.padEnd(7)}: median ${median(times).toFixed(0)} ms (min ${Math.min(...times).toFixed(0)}); ` +
      `${(median(times) / median(floors)).toFixed(2)}x node's floor`
  )
}
server.kill("SIGTERM")
proxy.close()
