/**
 * The web console in a real browser: the machine's Chromium (Debian's `chromium`, which
 * `.ci/run` installs) driven by playwright-core, against a reference server on the store the
 * run names (memory, or Postgres in the `postgres` project). Everything the console shows is
 * checked against what the API answers for the same key.
 *
 * Screenshots of the main pages go to `test-output/console/` (ignored by git); with
 * `TRIBUTARY_SCREENSHOTS=docs/console` they replace the README's.
 *
 * Without a Chromium the suite is skipped, and says so on stderr; CI always has one.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { ManagedRuntime } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { contentSecurityPolicy } from "../../src/server/http/console.js"
import { serverLayer, ServerUrl } from "../support/server.js"

const root = fileURLToPath(new URL("../..", import.meta.url))

/** The machine's Chromium: `TRIBUTARY_CHROMIUM`, or `chromium` on the PATH. */
const chromiumPath = (() => {
  const named = process.env["TRIBUTARY_CHROMIUM"]
  if (named !== undefined && existsSync(named)) return named
  for (const name of ["chromium", "chromium-browser"]) {
    try {
      return execFileSync("which", [name], { encoding: "utf8" }).trim()
    } catch {
      // not this one
    }
  }
  return undefined
})()

if (chromiumPath === undefined) {
  process.stderr.write(
    "\n!!! test/console: NO CHROMIUM ON THIS MACHINE, THE BROWSER SUITE IS SKIPPED. Install it (apt-get install chromium) or set TRIBUTARY_CHROMIUM.\n\n"
  )
}

const shots = join(root, process.env["TRIBUTARY_SCREENSHOTS"] ?? "test-output/console")

/** Polls `check` until it holds (30 s at most): what the console shows arrives by polling. */
const until = async (what: string, check: () => Promise<boolean> | boolean, millis = 30_000) => {
  const deadline = Date.now() + millis
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

// Generous bounds: a browser, a server and the rest of the suite share two loaded cores in CI.
describe.skipIf(chromiumPath === undefined)("the web console in Chromium", { timeout: 120_000 }, () => {
  // `processing`: each ingestion stays pending a moment, so the console shows it arrive.
  const runtime = ManagedRuntime.make(serverLayer({ faults: { processingMs: { min: 300, max: 700 } } }))
  let url: string
  let browser: Browser
  let page: Page
  const problems: Array<string> = []

  /** The API as the console's key sees it. */
  const api = async (path: string, key = "acme-admin", init: RequestInit = {}) => {
    const response = await fetch(`${url}${path}`, {
      ...init,
      headers: { "x-api-key": key, ...(init.body === undefined ? {} : { "content-type": "application/json" }) }
    })
    return { status: response.status, body: await response.json() as any }
  }
  const text = (testId: string) => page.getByTestId(testId).first().innerText()
  /** The whole page; `fullPage: false` for a dialog, which covers the window only. */
  const shot = async (name: string, fullPage = true) => {
    mkdirSync(shots, { recursive: true })
    await page.screenshot({ path: join(shots, `${name}.png`), fullPage })
  }
  const confirmDialog = async (expected: RegExp) => {
    const dialog = page.getByTestId("confirm")
    await dialog.waitFor()
    expect(await dialog.innerText()).toMatch(expected)
    await page.getByTestId("confirm-button").click()
  }

  let dataSourceId: number
  let datasetId: number

  beforeAll(async () => {
    url = await runtime.runPromise(ServerUrl)
    browser = await chromium.launch({ executablePath: chromiumPath!, args: ["--no-sandbox", "--disable-gpu"] })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    // Any script error, or anything the page's policy refuses, fails the suite at the end.
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`))
    page.on("console", (message) => {
      // The refusals the suite provokes (a wrong key, a viewer's purge, a deleted dataset) are logged by the browser.
      if (message.type() === "error" && !/status of (401|403|404)/.test(message.text())) problems.push(`console: ${message.text()}`)
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await runtime.dispose()
  })

  it("is served with a strict Content-Security-Policy, its library from the package", async () => {
    const response = await fetch(`${url}/console`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-security-policy")).toBe(contentSecurityPolicy)
    expect(contentSecurityPolicy).not.toMatch(/unsafe-inline|unsafe-eval|\*/)
    const library = await fetch(`${url}/console/vendor/preact-htm.js`)
    expect(library.status).toBe(200)
    expect(await library.text()).toMatch(/useState/)
    expect((await fetch(`${url}/console/../package.json`)).status).toBe(404)
    expect((await fetch(`${url}/console/nothing.js`)).status).toBe(404)
  })

  it("signs in: a wrong key is refused with the 401 explained; the key is kept in the tab, never in the URL", async () => {
    await page.goto(`${url}/console`)
    await page.fill("input[name=apiKey]", "not-a-key")
    await page.click("button[type=submit]")
    await until("the 401", async () => (await page.getByTestId("problem").count()) > 0)
    expect(await text("problem")).toMatch(/key was refused \(401\)/)
    await shot("sign-in")
    await page.fill("input[name=apiKey]", "acme-admin")
    await page.click("button[type=submit]")
    await page.getByTestId("who").waitFor()
    expect(await text("who")).toBe("Ada · admin · Acme")
    expect(page.url()).not.toContain("acme-admin")
    expect(await page.evaluate("sessionStorage.getItem('tributary.console.apiKey')")).toBe("acme-admin")
    expect(await page.evaluate("localStorage.length")).toBe(0)
    // The server's faults, from the header every answer carries.
    expect(await text("faults")).toContain("processing=300-700ms")
  })

  it("creates a data source and a dataset through their confirmations (schema editor)", async () => {
    await page.getByTestId("new-source-name").fill("console shop")
    await page.getByRole("button", { name: "Create data source…" }).click()
    await confirmDialog(/Create the data source console shop/)
    await until("the data source page", () => /#\/data-sources\/\d+$/.test(page.url()))
    dataSourceId = Number(/(\d+)$/.exec(page.url())![1])
    const source = await api(`/v2/data-sources/${dataSourceId}`)
    expect(source.body.data.name).toBe("console shop")

    await page.getByTestId("new-dataset-name").fill("orders")
    await page.getByTestId("column-id-0").fill("order")
    await page.getByTestId("column-key-0").check()
    await page.getByTestId("add-column").click()
    await page.getByTestId("column-id-1").fill("amount")
    await page.getByTestId("column-type-1").selectOption("number")
    await page.getByTestId("add-column").click()
    await page.getByTestId("column-id-2").fill("day")
    await page.getByTestId("column-type-2").selectOption("datetime")
    await page.getByRole("button", { name: "Create dataset…" }).click()
    await confirmDialog(/orders.*3 columns[\s\S]*order string \(primary key\)/)
    await until("the dataset page", () => /#\/datasets\/\d+$/.test(page.url()))
    datasetId = Number(/(\d+)$/.exec(page.url())![1])
    const schema = await api(`/v2/datasets/${datasetId}/schema`)
    expect(schema.body.data.items.map((c: any) => [c.id, c.dataType])).toEqual([["order", "string"], ["amount", "number"], ["day", "datetime"]])
    expect(schema.body.data.primaryKey).toEqual(["order"])
    await page.getByTestId("schema").waitFor()
    expect(await text("schema")).toMatch(/order\s+string\s+primary key/)
  })

  it("ingests pasted NDJSON in batches of 100; the ingestions arrive live with their rejected records", async () => {
    const lines = Array.from({ length: 248 }, (_, i) =>
      JSON.stringify({
        order: `A-${String(i).padStart(3, "0")}`,
        amount: (i * 37) % 1000 / 10,
        day: `2026-01-${String(1 + (i % 28)).padStart(2, "0")}`,
        region: ["north", "south", "east", "west"][i % 4]
      })
    )
    lines.splice(120, 0, JSON.stringify({ order: "bad-1", amount: "twelve" }))
    lines.splice(200, 0, JSON.stringify({ amount: 3 }))
    await page.getByTestId("ingest-text").fill(lines.join("\n"))
    await page.getByRole("button", { name: "Ingest…" }).click()
    await confirmDialog(/Send 250 records into orders, in 3 ingestions of up to 100/)
    await until("3 ingestions, all done", async () => {
      const rows = await page.locator("[data-testid=ingestions] tbody tr[data-ingestion]").allInnerTexts()
      return rows.length === 3 && rows.every((row) => row.startsWith("success"))
    }, 60_000)
    const listed = await api(`/v2/datasets/${datasetId}/ingestions`)
    expect(listed.body.data.items.map((i: any) => i.status)).toEqual(["success", "success", "success"])
    await until("248 rows", async () => (await text("row-count")) === "248 rows")

    // One more, sent by another client: it shows up without a reload, then its rejection.
    const accepted = await api(`/v2/datasets/${datasetId}/data`, "acme-editor", {
      method: "POST",
      body: JSON.stringify({ records: [{ order: "B-1", amount: 5, day: "2026-02-01" }, { order: "B-2", amount: true }] })
    })
    const ingestionId: string = accepted.body.data.ingestionId
    const row = page.locator(`tr[data-ingestion="${ingestionId}"]`)
    await row.waitFor({ timeout: 30_000 })
    await until("the new ingestion done", async () => (await row.innerText()).startsWith("success"))
    expect(await row.innerText()).toMatch(/success\s+\S+ \S+ UTC\s+Eve\s+2\s+1\s+0\s+1/)
    await row.getByTestId("rejected-toggle").click()
    const rejected = page.getByTestId("rejected-records").first()
    expect(await rejected.innerText()).toMatch(/unsupported_value amount: .*\{"order":"B-2","amount":true\}/)
    // The pasted batches' rejections, one in the second batch and one in the third, with their reasons.
    for (const toggle of await page.getByTestId("rejected-toggle").all()) {
      if ((await toggle.innerText()).includes("▸")) await toggle.click()
    }
    await until("all three reasons", async () => {
      const shown = await page.locator("[data-testid=ingestions]").innerText()
      return /missing_primary_key order/.test(shown) && /invalid_type amount: .*"twelve"/.test(shown)
    })
    expect(await text("throughput")).toMatch(/252 records/)
  })

  it("pages and sorts rows through the API's paging", async () => {
    await until("the rows", async () => (await text("range")).includes("of 249"))
    expect(await text("range")).toBe("rows 1–25 of 249")
    await page.getByRole("button", { name: "Next ›" }).click()
    await until("page 2", async () => (await text("range")) === "rows 26–50 of 249")
    const firstCells = () => page.locator("[data-testid=rows] tbody tr td:first-child").allInnerTexts()
    const expected = async (sortOrder: string, pageIndex: number) =>
      (await api(`/v2/datasets/${datasetId}/data?pageSize=25&page=${pageIndex}&sortBy=amount&sortOrder=${sortOrder}`)).body.data.items.map((r: any) => r.order)
    await page.locator("button[data-column=amount]").click()
    const ascending = await expected("asc", 0)
    await until("sorted by amount, ascending, from the first page", async () => JSON.stringify(await firstCells()) === JSON.stringify(ascending))
    expect(await text("range")).toBe("rows 1–25 of 249")
    await page.locator("button[data-column=amount]").click()
    const descending = await expected("desc", 0)
    await until("descending", async () => JSON.stringify(await firstCells()) === JSON.stringify(descending))
    await page.getByRole("button", { name: "Next ›" }).click()
    const second = await expected("desc", 1)
    await until("descending, page 2", async () => JSON.stringify(await firstCells()) === JSON.stringify(second))
    await page.locator("button[data-column=amount]").click()
    await page.getByTestId("rows").scrollIntoViewIfNeeded()
    await shot("dataset")
  })

  it("uploads a JSON file through the same ingest route", async () => {
    await page.getByTestId("ingest-file").setInputFiles({
      name: "more.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify([{ order: "F-1", amount: 1, day: "2026-03-01" }, { order: "A-000", amount: 999, day: "2026-03-02" }]))
    })
    await until("the file's text", async () => (await page.getByTestId("ingest-text").inputValue()).includes("F-1"))
    await page.getByRole("button", { name: "Ingest…" }).click()
    await confirmDialog(/Send 2 records into orders, in 1 ingestion of up to 100/)
    await until("250 rows (one appended, one overwritten)", async () => (await text("row-count")) === "250 rows")
    const row = (await api(`/v2/datasets/${datasetId}/data?pageSize=1&sortBy=amount&sortOrder=desc`)).body.data.items[0]
    expect(row).toMatchObject({ order: "A-000", amount: 999 })
  })

  it("searches data sources and datasets", async () => {
    await api("/v2/data-sources", "acme-admin", { method: "POST", body: JSON.stringify({ name: "elsewhere" }) })
    await page.goto(`${url}/console#/`)
    await page.getByTestId("data-sources").waitFor()
    await page.getByPlaceholder("Search data sources").fill("console")
    await until("one data source", async () => {
      const names = await page.locator("[data-testid=data-sources] tbody td:first-child").allInnerTexts()
      return JSON.stringify(names) === JSON.stringify(["console shop"])
    })
    await page.getByPlaceholder("Search datasets by name").fill("ord")
    await until("the dataset found", async () => (await page.locator("main").innerText()).includes(`orders\t${datasetId}`))
    await shot("organization")
    await page.getByRole("link", { name: "console shop" }).click()
    await until("the data source page", async () => (await page.locator("main").innerText()).includes("Datasets"))
    await page.getByPlaceholder("Search datasets").fill("nothing like it")
    await until("no match", async () => (await page.locator("main").innerText()).includes("No datasets."))
    await page.getByPlaceholder("Search datasets").fill("")
    await page.getByRole("link", { name: "orders" }).waitFor()
    await shot("data-source")
  })

  it("a viewer's key sees the 403 explained, and nothing changes", async () => {
    await page.getByRole("button", { name: "Sign out" }).click()
    expect(await page.evaluate("sessionStorage.getItem('tributary.console.apiKey')")).toBeNull()
    await page.fill("input[name=apiKey]", "acme-viewer")
    await page.click("button[type=submit]")
    await page.getByTestId("who").waitFor()
    await page.goto(`${url}/console#/datasets/${datasetId}`)
    await until("the rows, readable", async () => (await text("row-count")) === "250 rows")
    await page.getByRole("button", { name: "Purge…" }).click()
    await page.getByTestId("confirm-button").click()
    await page.getByTestId("forbidden").waitFor()
    const said = await text("forbidden")
    expect(said).toMatch(/Not allowed \(403 Forbidden\)/)
    expect(said).toMatch(/Vic.*viewer.*viewer keys may only read/)
    expect(said).toMatch(/code forbidden/)
    await shot("forbidden", false)
    await page.getByRole("button", { name: "Close" }).click()
    expect((await api(`/v2/datasets/${datasetId}`)).body.data.rowCount).toBe(250)
  })

  it("purges, deletes the dataset, deletes the data source, each after a confirmation", async () => {
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.fill("input[name=apiKey]", "acme-admin")
    await page.click("button[type=submit]")
    await page.getByTestId("who").waitFor()
    await page.goto(`${url}/console#/datasets/${datasetId}`)
    await until("the dataset", async () => (await text("row-count")) === "250 rows")
    await page.getByRole("button", { name: "Purge…" }).click()
    await page.getByRole("button", { name: "Cancel" }).click()
    expect((await api(`/v2/datasets/${datasetId}`)).body.data.rowCount).toBe(250)
    await page.getByRole("button", { name: "Purge…" }).click()
    await confirmDialog(/Remove all 250 rows of orders/)
    await until("no rows", async () => (await text("row-count")) === "0 rows")
    expect((await api(`/v2/datasets/${datasetId}`)).body.data.rowCount).toBe(0)

    await page.getByRole("button", { name: "Delete…" }).click()
    await confirmDialog(/Delete orders/)
    await until("back on the data source", () => page.url().endsWith(`#/data-sources/${dataSourceId}`))
    expect((await api(`/v2/datasets/${datasetId}`)).status).toBe(404)

    await page.getByRole("button", { name: "Delete data source…" }).click()
    await confirmDialog(/Delete console shop and every dataset in it/)
    await until("back on the organization", () => page.url().endsWith("#/"))
    expect((await api(`/v2/data-sources/${dataSourceId}`)).status).toBe(404)
    expect(problems).toEqual([])
  })
})
