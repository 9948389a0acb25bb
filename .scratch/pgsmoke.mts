import { Effect, Redacted, Stream, Chunk } from "effect"
import pg from "pg"
import * as P from "../connectors/postgres/index.js"
const url = process.env.DATABASE_URL!
const c = new pg.Client(url); await c.connect()
await c.query(`DROP SCHEMA IF EXISTS pgsmoke CASCADE; CREATE SCHEMA pgsmoke; CREATE TYPE pgsmoke.mood AS ENUM ('ok','sad');
CREATE TABLE pgsmoke.t (id int PRIMARY KEY, a bigint, n numeric, f float8, s text, u uuid, m pgsmoke.mood, ts timestamp, tz timestamptz, d date, arr text[], b bool, j jsonb, by bytea, iv interval)`)
await c.query(`INSERT INTO pgsmoke.t SELECT i, i*1000, i/3.0, i/7.0, 's'||i, gen_random_uuid(), 'ok', now(), now(), now(), ARRAY['x','y'], true, '{"a":1}', '\\x0102', '1 day 2 hours' FROM generate_series(1,25) i`)
await c.query(`UPDATE pgsmoke.t SET f = 'NaN' WHERE id = 5; UPDATE pgsmoke.t SET n = 1.5 WHERE id < 20; UPDATE pgsmoke.t SET a = 9007199254740993 WHERE id = 7`)
await c.end()
const prog = Effect.gen(function*() {
  const src = yield* P.make({ relation: { _tag: "Table", name: "pgsmoke.t" }, key: ["id"], partitions: 3, checkpoint: { _tag: "File", path: "/tmp/pgsmoke.json" } })
  console.log(src.name, src.plan, src.remaining, src.schema)
  const all = yield* Stream.runCollect(src.events)
  for (const e of Chunk.toReadonlyArray(all).slice(0, 4)) console.log(JSON.stringify(e))
  console.log(Chunk.toReadonlyArray(all).filter((e: any) => e._tag === "Malformed").map((e: any) => e.problem))
  console.log(Chunk.size(all))
}).pipe(Effect.provide(P.layer({ url: Redacted.make(url) })))
await Effect.runPromise(prog as any)
