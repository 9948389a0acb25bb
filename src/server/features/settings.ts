/**
 * Settings of data sources and datasets: permissions, sync frequency, metadata, column
 * metadata, time zone, verification, lineage.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Principal } from "../../api/security.js"
import { SyncIntervals } from "../../api/v2/common.js"
import { withArticle } from "../../internal/text.js"
import { isTimezone } from "../core/timezones.js"
import { now } from "../core/clock.js"
import { InvalidField } from "../core/errors.js"
import {
  type ColumnMetadata,
  type Dataset,
  type DatasetMetadata,
  type DatasetRef,
  unverified
} from "../core/store/Store.js"
import { SourceStore } from "../core/store/ports/sources.js"
import { canSee, resolvePermissions } from "../core/permissions.js"
import { editableDataSource, updateDataSource } from "../core/catalog/dataSources.js"
import { editableDataset, updateDataset } from "../core/catalog/datasets.js"
import { metricsOfDataset } from "./metrics.js"

const invalid = (field: string, message: string) => Effect.fail(new InvalidField({ field, message }))

/**
 * `InvalidField` on `syncInterval` unless it is one of the accepted minutes.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkSyncInterval = (syncInterval: number) =>
  (SyncIntervals as ReadonlyArray<number>).includes(syncInterval)
    ? Effect.succeed(syncInterval)
    : invalid("syncInterval", `syncInterval must be one of ${SyncIntervals.join(", ")} (minutes)`)

const intervalLabel = (minutes: number) =>
  minutes < 60 ? `Every ${minutes} minute${minutes === 1 ? "" : "s"}` : minutes === 1440
  ? "Every day"
  : `Every ${minutes / 60} hour${minutes === 60 ? "" : "s"}`

/**
 * The sync frequency options, with the current one marked.
 *
 * @since 0.1.0
 * @category utils
 */
export const syncFrequencyOptions = (current: number | null) =>
  SyncIntervals.map((syncInterval) => ({
    syncInterval,
    label: intervalLabel(syncInterval),
    isDefault: syncInterval === 1440,
    isSelected: syncInterval === (current ?? 1440),
    availability: "available"
  }))

/**
 * Sets a dataset's permissions; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDatasetPermissions = (
  principal: Principal,
  id: DatasetRef,
  update: Parameters<typeof resolvePermissions>[1]
) =>
  Effect.gen(function*() {
    yield* editableDataset(principal, id)
    const permissions = yield* resolvePermissions(principal, update)
    return yield* updateDataset(principal, id, { permissions })
  })

/**
 * Sets a dataset's sync interval; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDatasetSyncInterval = (principal: Principal, id: DatasetRef, syncInterval: number) =>
  Effect.gen(function*() {
    yield* editableDataset(principal, id)
    return yield* updateDataset(principal, id, { syncInterval: yield* checkSyncInterval(syncInterval) })
  })

/**
 * Changes a dataset's metadata; the default time dimension must be a datetime column.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateMetadata = (
  principal: Principal,
  id: DatasetRef,
  change: { readonly [K in keyof DatasetMetadata]?: DatasetMetadata[K] | undefined }
) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id)
    const timeDimension = change.defaultTimeDimension
    if (typeof timeDimension === "string") {
      const column = dataset.schema.find((c) => c.id === timeDimension)
      if (column === undefined) {
        return yield* invalid("defaultTimeDimension", `column "${timeDimension}" is not in the dataset schema`)
      }
      if (column.dataType !== "datetime") {
        return yield* invalid(
          "defaultTimeDimension",
          `column "${timeDimension}" is ${withArticle(column.dataType)} column; the default time dimension must be a datetime column`
        )
      }
    }
    const metadata: DatasetMetadata = {
      description: change.description === undefined ? dataset.metadata.description : change.description,
      synonyms: change.synonyms === undefined ? dataset.metadata.synonyms : change.synonyms,
      defaultTimeDimension: timeDimension === undefined ? dataset.metadata.defaultTimeDimension : timeDimension
    }
    return yield* updateDataset(principal, dataset.id, { metadata })
  })

const noColumnMetadata: ColumnMetadata = { description: null, conceptType: null, synonyms: null }

/**
 * The metadata of a column (empty for a column without any).
 *
 * @since 0.1.0
 * @category utils
 */
export const columnMetadataOf = (dataset: Dataset, columnId: string): ColumnMetadata =>
  dataset.columnMetadata[columnId] ?? noColumnMetadata

/**
 * @since 0.1.0
 * @category models
 */
export interface ColumnMetadataChange {
  readonly id: string
  readonly description?: string | null | undefined
  readonly conceptType?: ColumnMetadata["conceptType"] | undefined
  readonly synonyms?: ReadonlyArray<string> | null | undefined
}

/**
 * Changes the metadata of some columns; every change is checked before anything changes.
 *
 * @since 0.1.0
 * @category utils
 */
export const updateColumnMetadata = (principal: Principal, id: DatasetRef, changes: ReadonlyArray<ColumnMetadataChange>) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id)
    for (const [i, change] of changes.entries()) {
      const column = dataset.schema.find((c) => c.id === change.id)
      if (column === undefined) {
        return yield* invalid(`columns[${i}].id`, `column "${change.id}" is not in the dataset schema`)
      }
    }
    const columnMetadata: Record<string, ColumnMetadata> = { ...dataset.columnMetadata }
    for (const change of changes) {
      const current = columnMetadataOf(dataset, change.id)
      columnMetadata[change.id] = {
        description: change.description === undefined ? current.description : change.description,
        conceptType: change.conceptType === undefined ? current.conceptType : change.conceptType,
        synonyms: change.synonyms === undefined ? current.synonyms : change.synonyms
      }
    }
    return yield* updateDataset(principal, dataset.id, { columnMetadata })
  })

/**
 * Sets a dataset's time zone, and purges its rows if asked.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDatasetTimezone = (principal: Principal, id: DatasetRef, timezone: string, purgeData: boolean) =>
  Effect.gen(function*() {
    const dataset = yield* editableDataset(principal, id)
    if (!isTimezone(timezone)) return yield* invalid("timezone", `"${timezone}" is not a known IANA time zone`)
    const updated = yield* updateDataset(principal, dataset.id, { timezone })
    if (!purgeData) return updated
    const store = yield* SourceStore
    yield* store.purgeDataset(updated.id)
    return { ...updated, rowCount: 0, size: 0 }
  })

/**
 * Marks a dataset verified (by the principal, now) or not.
 *
 * @since 0.1.0
 * @category utils
 */
export const setVerification = (principal: Principal, id: DatasetRef, isVerified: boolean) =>
  Effect.gen(function*() {
    const verification = isVerified
      ? { isVerified: true, verifiedAt: yield* now, verifiedBy: { id: principal.userId, name: principal.userName } }
      : unverified
    return yield* updateDataset(principal, id, { verification })
  })

/**
 * A dataset's lineage: upstream its data source (when the principal may see it), downstream
 * the metrics built on it.
 *
 * @since 0.1.0
 * @category utils
 */
export const lineageOf = (principal: Principal, dataset: Dataset) =>
  Effect.gen(function*() {
    const store = yield* SourceStore
    const dataSource = yield* store.dataSource(dataset.dataSourceId)
    const parents = Option.isSome(dataSource) && canSee(principal, dataSource.value)
      ? [{ id: String(dataSource.value.id), name: dataSource.value.name, type: "dataSource" as const }]
      : []
    const metrics = yield* metricsOfDataset(principal, dataset)
    const children = metrics.map((m) => ({ id: m.id, name: m.name, type: "customMetric" as const }))
    return { id: dataset.number, parents, children }
  })

/**
 * Sets a data source's permissions; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDataSourcePermissions = (
  principal: Principal,
  id: number,
  update: Parameters<typeof resolvePermissions>[1]
) =>
  Effect.gen(function*() {
    yield* editableDataSource(principal, id)
    const permissions = yield* resolvePermissions(principal, update)
    return yield* updateDataSource(principal, id, { permissions })
  })

/**
 * Sets a data source's sync interval; editors and admins only.
 *
 * @since 0.1.0
 * @category utils
 */
export const setDataSourceSyncInterval = (principal: Principal, id: number, syncInterval: number) =>
  Effect.gen(function*() {
    yield* editableDataSource(principal, id)
    return yield* updateDataSource(principal, id, { syncInterval: yield* checkSyncInterval(syncInterval) })
  })
