/**
 * The embedded in-memory store: needs nothing else, forgets everything on exit.
 *
 * @since 0.1.0
 */
import { Effect, type Layer, Queue } from "effect"
import { layerOf, type Stores, type StoreService } from "./Stores.js"
import { makeState } from "./memory/state.js"
import { make as catalog } from "./memory/catalog.js"
import { make as sources } from "./memory/sources.js"
import { make as ingestions } from "./memory/ingestions.js"
import { make as metrics } from "./memory/metrics.js"
import { make as connections } from "./memory/connections.js"
import { make as activity } from "./memory/activity.js"

/**
 * Builds an empty memory store: every port over one state.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Effect.Effect<StoreService> =>
  Effect.map(Queue.sliding<void>(1), (wakeUp) => {
    const state = makeState(wakeUp)
    return {
      ...catalog(state),
      ...sources(state),
      ...ingestions(state),
      ...metrics(state),
      ...connections(state),
      ...activity(state)
    }
  })

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Stores> = layerOf(make())
