// Summarises a V8 .cpuprofile (from `node --cpu-prof`): the functions with the most self time,
// the most inclusive time (each sample counted once per function on its stack), and self time
// per file/package.
//
// Usage: node bench/cpuprofile-top.mjs FILE.cpuprofile [--top N] [--match TEXT] [--skip S]
//   --match TEXT   only list functions whose name or file contains TEXT (e.g. --match dist/)
//   --skip S       leave out the first S seconds (a server's start-up: module loading and
//                  compilation were a quarter of a --quick run's profile)
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: "string", default: "30" }, match: { type: "string" }, skip: { type: "string", default: "0" } }
})
if (positionals.length !== 1) {
  console.error("usage: node bench/cpuprofile-top.mjs FILE.cpuprofile [--top N] [--match TEXT]")
  process.exit(2)
}
const top = Number(args.top)
const skipMicros = Number(args.skip) * 1e6
const profile = JSON.parse(readFileSync(positionals[0], "utf8"))

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

const shortUrl = (url) => {
  if (!url) return ""
  const nm = url.lastIndexOf("node_modules/")
  if (nm !== -1) return url.slice(nm + 13)
  const dist = url.indexOf("/dist/")
  if (dist !== -1) return url.slice(dist + 1)
  const bench = url.indexOf("/bench/")
  if (bench !== -1) return url.slice(bench + 1)
  return url.replace(/^file:\/\//, "")
}
const keyOf = (node) => {
  const f = node.callFrame
  const where = shortUrl(f.url)
  return `${f.functionName || "(anonymous)"} ${where ? `${where}:${f.lineNumber + 1}` : ""}`.trim()
}
const fileOf = (node) => {
  const url = shortUrl(node.callFrame.url)
  if (url === "") return node.callFrame.functionName // (garbage collector), (program), (idle)
  return url
}

const self = new Map()
const inclusive = new Map()
const files = new Map()
let total = 0
let idle = 0
const add = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value)

let elapsed = 0
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i + 1] ?? 0 // a delta is the time until the next sample
  elapsed += delta
  if (elapsed <= skipMicros) continue
  const node = byId.get(profile.samples[i])
  if (node.callFrame.functionName === "(idle)") {
    idle += delta
    continue
  }
  total += delta
  add(self, keyOf(node), delta)
  add(files, fileOf(node), delta)
  const seen = new Set()
  for (let id = node.id; id !== undefined; id = parent.get(id)) {
    const key = keyOf(byId.get(id))
    if (!seen.has(key)) {
      seen.add(key)
      add(inclusive, key, delta)
    }
  }
}

const ms = (us) => (us / 1000).toFixed(0).padStart(7)
const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`
const list = (title, map) => {
  console.log(`\n${title}`)
  const rows = [...map].filter(([key]) => args.match === undefined || key.includes(args.match))
  rows.sort((a, b) => b[1] - a[1])
  for (const [key, us] of rows.slice(0, top)) console.log(`${ms(us)} ms ${pct(us)}  ${key}`)
}

console.log(`${positionals[0]}: ${(total / 1000).toFixed(0)} ms on CPU, ${(idle / 1000).toFixed(0)} ms idle`)
list("self time by file", files)
list("self time by function", self)
list("inclusive time by function (root and runtime frames included)", inclusive)
