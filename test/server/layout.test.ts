/**
 * The server's house rules, read from the import lines of `src` (type imports included):
 * no import circles anywhere in `src`, and the rooms of `src/server` depend one way only:
 * `core` on nothing of the server's but `core`; `features` on `core`; `http` on all of them.
 * The top files of `src/server` (`index.ts`, `seed.ts`, `faults.ts`) are the server's
 * inputs and entrance, and may be imported by any room.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize } from "node:path"
import { describe, expect, it } from "vitest"

const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

/** Every relative import or re-export of a file, as the file it names. */
const importsOf = (file: string): Array<string> =>
  [...readFileSync(file, "utf8").matchAll(/^(?:import|export)\s[^"']*?from\s+["'](\.{1,2}\/[^"']+)["']/gm)].map((match) =>
    normalize(join(dirname(file), match[1]!.replace(/\.js$/, ".ts")))
  )

const graph = (root: string): ReadonlyMap<string, ReadonlyArray<string>> => {
  const files = filesUnder(root)
  const known = new Set(files)
  return new Map(files.map((file) => [file, importsOf(file).filter((target) => known.has(target))]))
}

/** The import circles of a graph: its strongly connected groups of more than one file (Tarjan). */
const circles = (edges: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (file: string) => {
    index.set(file, next)
    low.set(file, next)
    next++
    stack.push(file)
    onStack.add(file)
    for (const target of edges.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const group: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        group.push(member)
      } while (member !== file)
      if (group.length > 1) found.push(group.sort())
    }
  }
  for (const file of edges.keys()) if (!index.has(file)) visit(file)
  return found
}

const rooms = ["core", "features", "http"] as const
const roomOf = (file: string) => rooms.find((room) => file.startsWith(join("src/server", room) + "/"))

describe("the server's layout", () => {
  it("finds a circle when there is one (the check itself)", () => {
    const edges = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    expect(circles(edges)).toEqual([["a", "b", "c"]])
  })

  it("has no import circles in src", () => {
    expect(circles(graph("src"))).toEqual([])
  })

  it("depends one way: core on core, features on core, http on anything", () => {
    const wrongWay: Array<string> = []
    for (const [file, targets] of graph("src/server")) {
      const from = roomOf(file)
      if (from === undefined) continue
      for (const target of targets) {
        const to = roomOf(target)
        if (to !== undefined && rooms.indexOf(to) > rooms.indexOf(from)) wrongWay.push(`${file} -> ${target}`)
      }
    }
    expect(wrongWay).toEqual([])
  })
})
