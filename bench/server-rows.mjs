// Reading a page deep inside a 1M-row dataset of the reference server on the Postgres store.
//
//   npm run build && npm run bench:server-rows                 (1,000,000 rows, 7 reads per page)
//   npm run bench:server-rows -- --rows 200000 --reads 3
//
// Options: --rows N  --reads N  --database-url URL (default DATABASE_URL or the test database)
//
// The server runs in a child process (bench/ingest-reference-server.mjs) on a fresh schema that
// is dropped afterwards. The dataset gets its schema from one real ingestion through the API;
// the other rows are written with one INSERT ... SELECT in the store's own layout (seq, primary
// key, jsonb row, size), which takes seconds where 10,000 ingestions through the API would take
// minutes. Then each page is read `--reads` times through the API (GET /v2/datasets/{id}/data,
// 200 rows a page): first, middle and last page, in storage order and sorted by a number and a
// text column. The first read of a sort starts that sort's index build (see `ensureSortIndex`):
// it is timed on its own and the build is waited for. Prints the median and the worst time per
// page, and the store's query as raw SQL (the database's share of the time).
import { randomBytes } from "node:crypto"
import pg from "pg"
import { benchArgs, fmt, median, portLine, startServer, table } from "./lib.mjs"

const { sortKeyOf } = await import(new URL("../dist/src/server/core/store/sql.js", import.meta.url).href)
const columnTypes = { n: "number", name: "string" }

const { values: args } = benchArgs(import.meta.url, {
  options: {
    rows: { type: "string", default: "1000000" },
    reads: { type: "string", default: "7" },
    "database-url": { type: "string", default: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/tributary_test" }
  }
})
const rowCount = Number(args.rows)
const reads = Number(args.reads)
const pageSize = 200
const apiKey = `trb_${randomBytes(16).toString("hex")}`
const schema = `bench_${randomBytes(4).toString("hex")}`
const databaseUrl = args["database-url"]

const server = await startServer(
  "reference server (Postgres store)",
  ["env", `BENCH_DATABASE_URL=${databaseUrl}`, `BENCH_DATABASE_SCHEMA=${schema}`, process.execPath,
    new URL("./ingest-reference-server.mjs", import.meta.url).pathname, apiKey],
  portLine
)
const db = new pg.Client({ connectionString: databaseUrl })
await db.connect()

const call = async (method, path, body) => {
  const started = performance.now()
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  const millis = performance.now() - started
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`)
  return { body: JSON.parse(text), millis }
}

try {
  const source = await call("POST", "/v2/data-sources", { name: "bench", timezone: "UTC" })
  const dataset = await call("POST", "/v2/datasets", {
    name: "rows",
    dataSourceId: source.body.data.id,
    schema: [{ id: "id", dataType: "string" }, { id: "n", dataType: "number" }, { id: "name", dataType: "string" }],
    primaryKey: ["id"]
  })
  // The v2 number in API paths; the store keys its rows by the dataset's UUID.
  const datasetId = dataset.body.data.id
  const datasetUuid = dataset.body.data.uuid
  const sample = Array.from({ length: 100 }, (_, i) => ({ id: `r-${i}`, n: i, name: `name ${i}` }))
  await call("POST", `/v2/datasets/${datasetId}/data`, { records: sample })
  for (;;) {
    const detail = await call("GET", `/v2/datasets/${datasetId}`)
    if (detail.body.data.rowCount === 100) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }

  const loadStarted = performance.now()
  // The same layout as the store writes: seq in storage order, the primary-key string, the row
  // as jsonb and its JSON size. `n` is pseudo-random so that sorting by it is real work.
  await db.query(`
    INSERT INTO ${schema}.dataset_rows (dataset_id, seq, key, data, size)
    SELECT $1::uuid, g, '["r-' || g || '"]', r, octet_length(r::text)
    FROM generate_series(100, $2::int - 1) AS g,
      LATERAL (SELECT jsonb_build_object('id', 'r-' || g, 'n', (g::bigint * 7919) % 1000003, 'name', 'name ' || md5(g::text)) AS r) x`,
    [datasetUuid, rowCount])
  await db.query(`
    UPDATE ${schema}.datasets SET row_count = $2, next_seq = $2,
      size = (SELECT sum(size) FROM ${schema}.dataset_rows WHERE dataset_id = $1::uuid)
    WHERE id = $1::uuid`, [datasetUuid, rowCount])
  await db.query(`ANALYZE ${schema}.dataset_rows`)
  // The sort keys name the store's collation unqualified, as the server's connections do.
  await db.query(`SET search_path = ${schema}`)
  const loadSeconds = (performance.now() - loadStarted) / 1000

  const lastPage = Math.ceil(rowCount / pageSize) - 1
  const middlePage = Math.floor(lastPage / 2)
  const cases = []
  for (const sort of [undefined, { by: "n", order: "asc" }, { by: "name", order: "desc" }]) {
    for (const page of [0, middlePage, lastPage]) cases.push({ sort, page })
  }
  const rows = []
  const indexed = new Set()
  const indexSeconds = new Map()
  for (const { page, sort } of cases) {
    const query = `page=${page}&pageSize=${pageSize}${sort === undefined ? "" : `&sortBy=${sort.by}&sortOrder=${sort.order}`}`
    const times = []
    let first
    let firstRead = null
    if (sort !== undefined && !indexed.has(sort.by + sort.order)) {
      // The first sort by a key starts its index build: timed on its own, then waited for.
      firstRead = (await call("GET", `/v2/datasets/${datasetId}/data?${query}`)).millis
      indexed.add(sort.by + sort.order)
      const started = performance.now()
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        const { rows: building } = await db.query("SELECT count(*)::int AS n FROM pg_stat_progress_create_index")
        if (building[0].n === 0) break
      }
      indexSeconds.set(sort.by + sort.order, (performance.now() - started) / 1000)
    }
    for (let i = 0; i < reads; i++) {
      const answer = await call("GET", `/v2/datasets/${datasetId}/data?${query}`)
      if (answer.body.data.items.length !== Math.min(pageSize, rowCount - page * pageSize)) {
        throw new Error(`page ${page}: ${answer.body.data.items.length} rows`)
      }
      if (answer.body.data.pagination.totalItems !== rowCount) throw new Error(`total ${answer.body.data.pagination.totalItems}`)
      first ??= answer.body.data.items[0]
      times.push(answer.millis)
    }
    const order = sort === undefined ? "seq" : sortKeyOf({ id: sort.by, dataType: columnTypes[sort.by] }, sort.order)
    const sqlTimes = []
    for (let i = 0; i < reads; i++) {
      const started = performance.now()
      // The store's own queries (see `rows` in src/server/core/store/sql.ts).
      await db.query(
        sort === undefined
          ? `SELECT data FROM dataset_rows WHERE dataset_id = $1::uuid AND seq IN (SELECT seq FROM dataset_rows
              WHERE dataset_id = $1::uuid ORDER BY seq LIMIT ${pageSize} OFFSET ${page * pageSize}) ORDER BY seq`
          : `SELECT data FROM dataset_rows WHERE dataset_id = $1::uuid ORDER BY ${order} LIMIT ${pageSize} OFFSET ${page * pageSize}`,
        [datasetUuid]
      )
      sqlTimes.push(performance.now() - started)
    }
    rows.push([
      sort === undefined ? "storage order" : `${sort.by} ${sort.order}`,
      `${page} (rows ${fmt(page * pageSize)}+)`,
      firstRead === null ? "" : `${fmt(firstRead, 1)} (index built in ${fmt(indexSeconds.get(sort.by + sort.order), 1)} s)`,
      fmt(median(times), 1),
      fmt(Math.max(...times), 1),
      fmt(median(sqlTimes), 1),
      JSON.stringify(first).slice(0, 40)
    ])
  }
  console.log(`server-rows: ${fmt(rowCount)} rows (written in ${fmt(loadSeconds, 1)} s), pages of ${pageSize}, ${reads} reads each`)
  table(["order", "page", "first read ms", "API median ms", "API max ms", "SQL median ms", "first row"], rows)
} finally {
  await server.stop()
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await db.end()
}
