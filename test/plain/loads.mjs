// Records every module the program resolves, written to the file LOADS_FILE names at exit:
// `LOADS_FILE=... node --import ./test/plain/loads.mjs ...`
import { writeFileSync } from "node:fs"
import { register } from "node:module"
const { port1, port2 } = new MessageChannel()
const loaded = new Set()
port1.on("message", (url) => loaded.add(url))
port1.unref()
register(
  "data:text/javascript," + encodeURIComponent(
    "let port; export function initialize(data) { port = data.port } " +
      "export async function resolve(specifier, context, next) { const r = await next(specifier, context); port.postMessage(r.url); return r }"
  ),
  { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] }
)
process.on("exit", () => writeFileSync(process.env.LOADS_FILE, JSON.stringify([...loaded])))
