/**
 * v2 dataset settings handlers: metadata, column metadata, time zone, permissions,
 * verification, sync frequency, sync history and lineage.
 *
 * Reads need the dataset to be visible (404 otherwise); writes need the editor role or
 * higher (403), checked before the body is validated.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Option } from "effect"
import { TributaryApi } from "../../api/index.js"
import { CurrentPrincipal, type Principal } from "../../api/security.js"
import { DisplayType, NumericDisplayTypes } from "../../api/v2/datasetSettings.js"
import { isTimezone } from "../../timezones.js"
import { canSee, requireRole } from "../auth.js"
import { isoTimestamp } from "../clock.js"
import { pageOf } from "../paging.js"
import { invalidInput, respond } from "../request.js"
import { updateDataset, visibleDataset } from "../services/datasets.js"
import { checkSyncInterval, resolvePermissions, syncFrequencyOptions } from "../services/settings.js"
import { type ColumnMetadata, type Dataset, Store, unverified } from "../store/Store.js"
import { respondDetail } from "./datasets.js"

/** A visible dataset the principal may change: 404, then 403. */
const editableDataset = (principal: Principal, id: string) =>
  Effect.tap(visibleDataset(principal, id), () => requireRole(principal, "editor", "change datasets"))

const noColumnMetadata: ColumnMetadata = { description: null, conceptType: null, synonyms: null, displayType: null }

const isDisplayType = (value: string | null): value is typeof DisplayType.Type =>
  value !== null && (DisplayType.literals as ReadonlyArray<string>).includes(value)

/** One entry per schema column, in schema order. */
const columnMetadataItems = (d: Dataset) =>
  d.schema.map((column) => {
    const meta = d.columnMetadata[column.id] ?? noColumnMetadata
    return {
      id: column.id,
      displayName: column.id,
      dataType: column.dataType,
      displayType: isDisplayType(meta.displayType) ? meta.displayType : null,
      description: meta.description,
      conceptType: meta.conceptType,
      synonyms: meta.synonyms
    }
  })

/** Upstream nodes: the data source (when the principal may see it). */
const lineageOf = (principal: Principal, d: Dataset) =>
  Effect.gen(function*() {
    const store = yield* Store
    const dataSource = yield* store.dataSource(d.dataSourceId)
    const parents = Option.isSome(dataSource) && canSee(principal, dataSource.value)
      ? [{ id: String(dataSource.value.id), name: dataSource.value.name, type: "dataSource" as const }]
      : []
    return { id: d.id, parents, children: [] }
  })

/** @since 0.1.0 */
export const V2DatasetSettingsLive = HttpApiBuilder.group(TributaryApi, "v2DatasetSettings", (handlers) =>
  handlers
    .handle("getMetadata", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.metadata }))
      ))
    .handle("updateMetadata", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* editableDataset(principal, path.id)
        const timeDimension = payload.defaultTimeDimension
        if (typeof timeDimension === "string") {
          const column = dataset.schema.find((c) => c.id === timeDimension)
          if (column === undefined) {
            return yield* invalidInput("defaultTimeDimension", `column "${timeDimension}" is not in the dataset schema`)
          }
          if (column.dataType !== "datetime") {
            return yield* invalidInput(
              "defaultTimeDimension",
              `column "${timeDimension}" is a ${column.dataType} column; the default time dimension must be a datetime column`
            )
          }
        }
        const metadata = {
          description: payload.description === undefined ? dataset.metadata.description : payload.description,
          synonyms: payload.synonyms === undefined ? dataset.metadata.synonyms : payload.synonyms,
          defaultTimeDimension: timeDimension === undefined ? dataset.metadata.defaultTimeDimension : timeDimension
        }
        const updated = yield* updateDataset(principal, dataset.id, { metadata })
        return yield* respond("success", { data: updated.metadata })
      }))
    .handle("getColumnMetadata", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: columnMetadataItems(d) } }))
      ))
    .handle("updateColumnMetadata", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* editableDataset(principal, path.id)
        // Everything is checked before anything changes.
        for (const [i, change] of payload.columns.entries()) {
          const column = dataset.schema.find((c) => c.id === change.id)
          if (column === undefined) {
            return yield* invalidInput(`columns[${i}].id`, `column "${change.id}" is not in the dataset schema`)
          }
          const displayType = change.displayType
          if (displayType != null && NumericDisplayTypes.includes(displayType) && column.dataType !== "number") {
            return yield* invalidInput(
              `columns[${i}].displayType`,
              `display type ${displayType} applies to number columns only; "${column.id}" is a ${column.dataType} column`
            )
          }
        }
        const columnMetadata: Record<string, ColumnMetadata> = { ...dataset.columnMetadata }
        for (const change of payload.columns) {
          const current = columnMetadata[change.id] ?? noColumnMetadata
          columnMetadata[change.id] = {
            description: change.description === undefined ? current.description : change.description,
            conceptType: change.conceptType === undefined ? current.conceptType : change.conceptType,
            synonyms: change.synonyms === undefined ? current.synonyms : change.synonyms,
            displayType: change.displayType === undefined ? current.displayType : change.displayType
          }
        }
        const updated = yield* updateDataset(principal, dataset.id, { columnMetadata })
        return yield* respond("success", { data: { items: columnMetadataItems(updated) } })
      }))
    .handle("setTimezone", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* editableDataset(principal, path.id)
        if (!isTimezone(payload.timezone)) {
          return yield* invalidInput("timezone", `"${payload.timezone}" is not a known IANA time zone`)
        }
        const updated = yield* updateDataset(principal, dataset.id, { timezone: payload.timezone })
        if (payload.purgeData === true) {
          const store = yield* Store
          yield* store.purgeDataset(updated.id)
        }
        return yield* respondDetail(updated)
      }))
    .handle("getPermissions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.permissions }))
      ))
    .handle("setPermissions", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* editableDataset(principal, path.id)
        const permissions = yield* resolvePermissions(principal, payload)
        const updated = yield* updateDataset(principal, dataset.id, { permissions })
        return yield* respond("success", { data: updated.permissions })
      }))
    .handle("getVerification", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.verification }))
      ))
    .handle("setVerification", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const verification = payload.isVerified
          ? { isVerified: true, verifiedAt: isoTimestamp(), verifiedBy: { id: principal.userId, name: principal.userName } }
          : unverified
        const updated = yield* updateDataset(principal, path.id, { verification })
        return yield* respond("success", { data: updated.verification })
      }))
    .handle("setSyncFrequency", ({ path, payload }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* editableDataset(principal, path.id)
        const syncInterval = yield* checkSyncInterval(payload.syncInterval)
        return yield* respondDetail(yield* updateDataset(principal, dataset.id, { syncInterval }))
      }))
    .handle("syncFrequencyOptions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } }))
      ))
    // Datasets fed through the API are never synced: their history is always empty.
    .handle("syncHistory", ({ path, urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap(() => respond("success", { data: pageOf([], urlParams) }))
      ))
    .handle("syncStatistics", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap(() =>
          respond("success", {
            data: { avgSuccessDuration: null, dailyStatistics: [], lastSuccessfulUpdateAt: null, successRate: null }
          })
        )
      ))
    .handle("getLineage", ({ path }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const dataset = yield* visibleDataset(principal, path.id)
        return yield* respond("success", { data: yield* lineageOf(principal, dataset) })
      })))
