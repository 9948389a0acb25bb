/**
 * The store's port for rows, ingestions and idempotency records: what every ingest touches.
 * Ingestions are recorded with their records, claimed by workers under a lease, and completed once
 * with what the ingestion service decided.
 *
 * @since 0.1.0
 */
import { Context, type Effect, type Option } from "effect"
import type { IdempotencyKeyReused, StoreError } from "../../errors.js"
import type { Row } from "../../../../records.js"
import type {
  ClaimedIngestion,
  DecidedGroup,
  Ingestion,
  NewIngestion,
  Page,
  RowQuery,
  Slice
} from "../Store.js"

/**
 * Every method is atomic; who may do what is the services' concern.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestionStoreService {
  readonly rows: (datasetId: string, query: RowQuery) => Effect.Effect<Page<Row>, StoreError>

  /**
   * Records an accepted ingestion (`queued`) with the records it carries. With
   * `processingDelayMillis`, no worker takes it until that long after its acceptance (the
   * `processing` fault).
   */
  readonly createIngestion: (
    input: NewIngestion,
    records: ReadonlyArray<unknown>
  ) => Effect.Effect<Ingestion, StoreError>

  readonly ingestion: (id: string) => Effect.Effect<Option.Option<Ingestion>, StoreError>

  /** Newest first. */
  readonly listIngestions: (datasetId: string, slice: Slice) => Effect.Effect<Page<Ingestion>, StoreError>

  /** Every finished (`success` or `failed`) ingestion of a dataset, newest first, without records or problems. */
  readonly finishedIngestions: (
    datasetId: string
  ) => Effect.Effect<ReadonlyArray<Pick<Ingestion, "status" | "initiatedAt" | "duration">>, StoreError>

  /**
   * Takes ingestions of one dataset for `owner`, marking them `processing` until `leaseMillis`
   * from now: the oldest pending ingestion of a dataset, when it is queued (or its worker's
   * lease ran out) and due, and the pending ones after it while they are too, up to `max`, in
   * acceptance order. A dataset whose oldest pending ingestion is held or not yet due gives
   * nothing: its later ones wait for it. Of the datasets that can give, the one whose oldest
   * waits longest. Empty when none can.
   */
  readonly claimIngestions: (
    owner: string,
    leaseMillis: number,
    max: number
  ) => Effect.Effect<ReadonlyArray<ClaimedIngestion>, StoreError>

  /**
   * Persists the decisions of claimed ingestions of one dataset, in order, in one step: columns
   * and rows are written and each ingestion ends `success` with its own counts. The ids of those
   * ended. Only if the dataset's schema is still the one they were decided against (compared
   * under the dataset's lock): else nothing is written and those still held go back to the
   * queue, to be decided again. The order of acceptance holds here whatever the claims: the
   * ingestions end only up to the first one whose lease was lost (or that is gone, or whose
   * dataset is gone), and only while no ingestion of the dataset accepted before them is still
   * pending; the rest is left out, nothing of it written, and those still held go back to the
   * queue.
   */
  readonly completeIngestions: (group: DecidedGroup) => Effect.Effect<ReadonlyArray<string>, StoreError>

  /** Ends a claimed ingestion as `failed` with the reason; false when the lease was lost. */
  readonly failIngestion: (claim: ClaimedIngestion, failure: string) => Effect.Effect<boolean, StoreError>

  /**
   * Waits until an ingestion may be waiting: one was created, one became due, or a lease may
   * have run out.
   */
  readonly awaitIngestions: Effect.Effect<void, StoreError>

  /**
   * Runs `execute` at most once for `scope` within `windowMillis`: a later call with the same
   * fingerprint gets the first call's answer (`replayed`), one with another fingerprint fails
   * with `IdempotencyKeyReused`, and one arriving while the first runs waits for its answer. A
   * failed `execute` keeps nothing. Answers must be plain JSON values (a durable store keeps them as JSON).
   */
  readonly once: <A, E, R>(
    request: { readonly key: string; readonly scope: string; readonly fingerprint: string; readonly windowMillis: number },
    execute: Effect.Effect<A, E, R>
  ) => Effect.Effect<{ readonly answer: A; readonly replayed: boolean }, E | IdempotencyKeyReused | StoreError, R>
}

/**
 * @since 0.1.0
 * @category services
 */
export class IngestionStore extends Context.Tag("tributary/server/IngestionStore")<IngestionStore, IngestionStoreService>() {}
