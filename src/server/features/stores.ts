/**
 * The server's whole store: the core's ports (`core/store/Stores.ts`) and the features' own
 * (`metrics/store.ts`, `connections/store.ts`, `activity/store.ts`), all from one store. The
 * core knows nothing of the features' ports; this is where they meet. The two stores are
 * `memoryStore.ts` and `sqlStore.ts`.
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
import { allStores, contextOf as coreContextOf, type Stores, type StoreService } from "../core/store/Stores.js"
import { ActivityStore, type ActivityStoreService } from "./activity/store.js"
import { ConnectionStore, type ConnectionStoreService } from "./connections/store.js"
import { MetricStore, type MetricStoreService } from "./metrics/store.js"

/**
 * Every port of the server's store.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerStoreService = StoreService & MetricStoreService & ConnectionStoreService & ActivityStoreService

/**
 * The ports the server's store layer provides.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerStores = Stores | MetricStore | ConnectionStore | ActivityStore

/**
 * Each port of `service`, as a context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const contextOf = (service: ServerStoreService): Context.Context<ServerStores> =>
  coreContextOf(service).pipe(
    Context.add(MetricStore, service),
    Context.add(ConnectionStore, service),
    Context.add(ActivityStore, service)
  )

/**
 * Every port as one service, from the server's store layer's context.
 *
 * @since 0.1.0
 * @category utils
 */
export const allServerStores: Effect.Effect<ServerStoreService, never, ServerStores> = Effect.map(
  Effect.all([allStores, MetricStore, ConnectionStore, ActivityStore]),
  ([core, metrics, connections, activity]) => ({ ...core, ...metrics, ...connections, ...activity })
)
