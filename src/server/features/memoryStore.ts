/**
 * The server's embedded in-memory store: the core's ports and the features' own over one state
 * (`core/store/memory.ts`, and each feature's `memory.ts` made from the same state). Needs
 * nothing else, forgets everything on exit.
 *
 * @since 0.1.0
 */
import { Effect, type Layer } from "effect"
import * as CoreMemory from "../core/store/memory.js"
import type { MemoryState } from "../core/store/memory/state.js"
import * as ActivityMemory from "./activity/memory.js"
import * as ConnectionsMemory from "./connections/memory.js"
import * as MetricsMemory from "./metrics/memory.js"
import { contextOf, type ServerStores, type ServerStoreService } from "./stores.js"

const portsOf = (state: MemoryState): ServerStoreService => ({
  ...CoreMemory.portsOf(state),
  ...MetricsMemory.make(state),
  ...ConnectionsMemory.make(state),
  ...ActivityMemory.make(state)
})

/**
 * Builds an empty memory store: every port over one state.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Effect.Effect<ServerStoreService> => Effect.map(CoreMemory.makeState, portsOf)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ServerStores> = CoreMemory.layerWith((state) => contextOf(portsOf(state)))
