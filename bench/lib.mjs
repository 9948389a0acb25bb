// What the benchmarks share: pinning to cores, reading a process's CPU and memory from /proc,
// starting a server in a child process, and printing medians and tables.
import { execFileSync, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { availableParallelism, loadavg } from "node:os"
import { basename } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { createInterface } from "node:readline"

// ---- options -----------------------------------------------------------------------------------

/**
 * A bench's options, as `parseArgs(config)` answers them, with `--help`: it prints the script's
 * opening comment (what it measures, how to run it, its options) and exits 0. An option the
 * bench does not know is one line naming it, and exit 2.
 */
export const benchArgs = (scriptUrl, config) => {
  const file = fileURLToPath(scriptUrl)
  let parsed
  try {
    parsed = parseArgs({ ...config, options: { ...config.options, help: { type: "boolean", default: false } } })
  } catch (error) {
    console.error(`${basename(file)}: ${error.message} (--help lists the options)`)
    process.exit(2)
  }
  if (parsed.values.help) {
    const header = []
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line.startsWith("//")) break
      header.push(line.replace(/^\/\/ ?/, ""))
    }
    console.log(header.join("\n"))
    process.exit(0)
  }
  return parsed
}

// ---- pinning and /proc -------------------------------------------------------------------------

/** Whether processes can be pinned: taskset exists and there are two cores to pin to. */
export const hasTaskset = (() => {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" })
    return availableParallelism() >= 2
  } catch {
    return false
  }
})()

/** Pins this process (the orchestrator and whatever load it generates itself) to core 0. */
export const pinSelf = () => {
  if (hasTaskset) execFileSync("taskset", ["-a", "-cp", "0", String(process.pid)], { stdio: "ignore" })
}

/** `[file, argv]` that runs `command` on `core` when pinning is possible. */
export const pinned = (core, command) =>
  hasTaskset ? ["taskset", ["-c", String(core), ...command]] : [command[0], command.slice(1)]

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
  } catch {
    return 100
  }
})()

/** utime + stime of a process, in µs. */
export const cpuMicros = (pid) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ") // fields from #3 (state) on
  return ((Number(fields[11]) + Number(fields[12])) / clockTicks) * 1e6 // #14 utime, #15 stime
}

/** A field of /proc/pid/status in kB (VmHWM: peak RSS, VmRSS: current). */
export const statusKb = (pid, field) => {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return match ? Number(match[1]) : NaN
}

// ---- servers -----------------------------------------------------------------------------------

/**
 * Starts a server in a child process pinned to core 1; `ready` turns its first stdout line
 * into its base URL. Answers `{ name, pid, url, stop }`.
 */
export const startServer = (name, command, ready) =>
  new Promise((resolveStart, rejectStart) => {
    const [file, argv] = pinned(1, command)
    const child = spawn(file, argv, { stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise((r) => child.once("exit", r))
    const onEarlyExit = (code) => rejectStart(new Error(`${name} exited (${code}) before listening`))
    child.once("exit", onEarlyExit)
    createInterface({ input: child.stdout }).once("line", (line) => {
      child.off("exit", onEarlyExit)
      child.stdout.resume()
      resolveStart({
        name,
        pid: child.pid,
        url: ready(line),
        stop: async () => {
          child.kill("SIGTERM")
          await exited
        }
      })
    })
  })

/** The URL of a server that prints `{"port":N}` once it listens on 127.0.0.1. */
export const portLine = (line) => `http://127.0.0.1:${JSON.parse(line).port}`

/** The URL in the first line `tributary serve` prints ("… listening on http://…"). */
export const servedUrl = (line) => {
  const url = /listening on (\S+)/.exec(line)?.[1]
  if (url === undefined) throw new Error(`unexpected first line from tributary serve: ${line}`)
  return url
}

/** One API call to a bench's server with `apiKey`; answers the parsed answer (anything but 200 throws). */
export const apiCall = async (url, apiKey, method, path, payload) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: payload === undefined ? undefined : JSON.stringify(payload)
  })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`)
  return JSON.parse(text)
}

// ---- raw senders -------------------------------------------------------------------------------

/**
 * What the hand-written baselines share: `limit(n)`, a counting semaphore, and `postAndPoll`,
 * which POSTs one body of records with undici (a fresh idempotency key) and polls its ingestion
 * until it succeeds; it throws on any other answer.
 */
export const rawIngest = async ({ baseUrl, apiKey, datasetId }) => {
  const { request } = await import("undici")
  const { randomUUID } = await import("node:crypto")
  const headers = { "content-type": "application/json", "x-api-key": apiKey }
  const dataPath = `${baseUrl}/v2/datasets/${datasetId}/data`
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
  return {
    limit: (n) => {
      let permits = n
      const waiters = []
      return {
        acquire: () => (permits > 0 ? (permits--, Promise.resolve()) : new Promise((r) => waiters.push(r))),
        release: () => (waiters.length > 0 ? waiters.shift()() : permits++)
      }
    },
    postAndPoll: async (records) => {
      const posted = await request(dataPath, { method: "POST", headers: { ...headers, "idempotency-key": randomUUID() }, body: JSON.stringify({ records }) })
      const answer = await posted.body.json()
      if (posted.statusCode !== 200) throw new Error(`POST answered ${posted.statusCode}`)
      for (let wait = 20;; wait = Math.min(1000, Math.ceil(wait * 1.5))) {
        const polled = await request(`${baseUrl}/v2/datasets/${datasetId}/ingestions/${answer.data.ingestionId}`, { headers })
        const detail = await polled.body.json()
        if (detail.data.status === "success") return
        await sleep(wait)
      }
    }
  }
}

/** Runs the sender `modes[mode]`: exit 0 when it resolves, 1 (after printing why) when it fails. */
export const runMode = (modes, mode) => {
  if (!(mode in modes)) {
    console.error(`unknown mode ${mode}`)
    process.exit(2)
  }
  modes[mode]().then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}

// ---- report ------------------------------------------------------------------------------------

/**
 * How busy the machine is besides the bench: the load average and, where Linux reports it, the
 * share of time some task waited for a CPU (`/proc/pressure/cpu`, "some", over the last 10 and
 * 60 s). Printed at a bench's start and end: a run with pressure well above zero before it
 * started shares its cores with something else (a Kafka broker left running, a build), and its
 * single rounds can move by a third or more. At the end the bench's own processes count too.
 */
export const machineLoad = () => {
  const load = loadavg().map((x) => fmt(x, 2)).join(" ")
  let pressure = ""
  try {
    const some = /^some avg10=([\d.]+) avg60=([\d.]+)/m.exec(readFileSync("/proc/pressure/cpu", "utf8"))
    if (some !== null) pressure = `; CPU pressure ${fmt(Number(some[1]))}% (10 s), ${fmt(Number(some[2]))}% (60 s)`
  } catch {
    // No pressure stall information here (not Linux, or an older kernel).
  }
  return `load average ${load}${pressure}`
}

export const median = (xs) => {
  const s = [...xs].filter(Number.isFinite).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

export const fmt = (x, digits = 0) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "-"

/** "median (min–max)" of per-round ratios. */
export const range = (xs) => `${fmt(median(xs), 2)} (${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)})`

const pad = (cells, widths) =>
  cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ")

export const table = (header, rows) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)))
  console.log(pad(header, widths))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const row of rows) console.log(pad(row, widths))
}

/**
 * Per-round ratios of `key` between `name` and `baseline` (`invert`: baseline ÷ name) over
 * the runs `{ round, <nameKey>, ... }`.
 */
export const perRoundRatios = (runs, nameKey, baseline, name, key, invert) => {
  const xs = []
  for (const round of new Set(runs.map((r) => r.round))) {
    const base = runs.find((r) => r.round === round && r[nameKey] === baseline)
    const other = runs.find((r) => r.round === round && r[nameKey] === name)
    if (base && other) xs.push(invert ? base[key] / other[key] : other[key] / base[key])
  }
  return xs
}
