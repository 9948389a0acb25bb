/**
 * Puts @effect/vitest's testers (`it.effect`, `it.scoped`, ...) back on vitest's `it` before
 * each test file. `layer(...)(name, (it) => ...)` assigns its own testers onto that shared
 * object (@effect/vitest 0.30), so where files share a process (`isolate: false`) a file run
 * after one that uses `layer` ran its `it.effect` in that layer's runtime: without the test
 * services, and after its scope had closed ("testClock.adjust is not a function" in
 * test/server/store.test.ts after test/server/fuzz.test.ts).
 */
import { effect, flakyTest, it, layer, live, prop, scoped, scopedLive } from "@effect/vitest"

Object.assign(it, { effect, flakyTest, layer, live, prop, scoped, scopedLive })
