/**
 * The embedded in-memory store of the core's ports: needs nothing else, forgets everything on
 * exit. The server's whole memory store, with the features' ports over the same state, is
 * `features/memoryStore.ts` (`layerWith` here).
 *
 * @since 0.1.0
 */
import { type Context, Effect, Layer, Queue } from "effect"
import { contextOf, type Stores, type StoreService } from "./Stores.js"
import { makeState as stateOf, type MemoryState } from "./memory/state.js"
import { make as catalog } from "./memory/catalog.js"
import { make as sources } from "./memory/sources.js"
import { make as ingestions } from "./memory/ingestions.js"

/**
 * A new, empty state.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState: Effect.Effect<MemoryState> = Effect.map(Queue.sliding<void>(1), stateOf)

/**
 * The core's ports over `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const portsOf = (state: MemoryState): StoreService => ({
  ...catalog(state),
  ...sources(state),
  ...ingestions(state)
})

/**
 * A memory store whose ports are what `contextOf` makes of a fresh state: the core's and
 * others over the same state.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = <R>(contextOf: (state: MemoryState) => Context.Context<R>): Layer.Layer<R> =>
  Layer.effectContext(Effect.map(makeState, contextOf))

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Stores> = layerWith((state) => contextOf(portsOf(state)))
