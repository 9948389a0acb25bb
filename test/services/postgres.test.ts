import pg from "pg"
import Cursor from "pg-cursor"
import { describe, expect, it } from "vitest"
import { databaseUrl } from "../support/services.js"

describe("Postgres (real server)", () => {
  it("streams 10,000 rows through a cursor in chunks of 1,000", async () => {
    const client = new pg.Client({ connectionString: databaseUrl() })
    await client.connect()
    try {
      await client.query(
        "create temp table cursor_smoke as select g as id, md5(g::text) as payload from generate_series(1, 10000) g"
      )
      const cursor = client.query(new Cursor<{ id: number }>("select id, payload from cursor_smoke order by id"))
      const chunkSizes: number[] = []
      const ids: number[] = []
      try {
        for (;;) {
          const rows = await cursor.read(1000)
          chunkSizes.push(rows.length)
          if (rows.length === 0) break
          for (const row of rows) ids.push(row.id)
        }
      } finally {
        await cursor.close()
      }
      expect(chunkSizes).toEqual([...Array.from({ length: 10 }, () => 1000), 0])
      expect(ids).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1))
    } finally {
      await client.end()
    }
  })
})
