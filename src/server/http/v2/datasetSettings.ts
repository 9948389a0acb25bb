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
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { sliceOf } from "../../core/paging.js"
import { change, datasetByNumber, serve } from "../handler.js"
import { respond } from "../envelope.js"
import { visibleDataset } from "../../core/catalog/datasets.js"
import { planOf } from "../../features/modifications/rows.js"
import {
  columnMetadataOf,
  lineageOf,
  setDatasetPermissions,
  setDatasetSyncInterval,
  setDatasetTimezone,
  setVerification,
  syncFrequencyOptions,
  updateColumnMetadata,
  updateMetadata
} from "../../features/settings.js"
import type { Dataset } from "../../core/store/Store.js"
import { respondDetail } from "./datasets.js"

/** One entry per schema column, in schema order; display names are the modifications' own. */
const columnMetadataItems = (d: Dataset) => {
  const plan = planOf(d)
  return d.schema.map((column) => {
    const meta = columnMetadataOf(d, column.id)
    return {
      id: column.id,
      displayName: plan.column(column.id)?.displayName ?? column.id,
      description: meta.description,
      conceptType: meta.conceptType,
      synonyms: meta.synonyms
    }
  })
}

/**
 * @since 0.1.0
 * @category layers
 */
export const V2DatasetSettingsLive = HttpApiBuilder.group(TributaryApi, "v2DatasetSettings", (handlers) =>
  handlers
    .handle("getMetadata", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), (d) => respond("success", { data: d.metadata })))
    .handle("updateMetadata", ({ path, payload }) =>
      change((p) => updateMetadata(p, path.id, payload), datasetByNumber, (d) => respond("success", { data: d.metadata })))
    .handle("getColumnMetadata", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), (d) => respond("success", { data: { items: columnMetadataItems(d) } })))
    .handle("updateColumnMetadata", ({ path, payload }) =>
      change(
        (p) => updateColumnMetadata(p, path.id, payload.columns),
        datasetByNumber,
        (d) => respond("success", { data: { items: columnMetadataItems(d) } })
      ))
    .handle("setTimezone", ({ path, payload }) =>
      change((p) => setDatasetTimezone(p, path.id, payload.timezone, payload.purgeData === true), datasetByNumber, respondDetail))
    .handle("getPermissions", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), (d) => respond("success", { data: d.permissions })))
    .handle("setPermissions", ({ path, payload }) =>
      change((p) => setDatasetPermissions(p, path.id, payload), datasetByNumber, (d) => respond("success", { data: d.permissions })))
    .handle("getVerification", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), (d) => respond("success", { data: d.verification })))
    .handle("setVerification", ({ path, payload }) =>
      change(
        (p) => setVerification(p, path.id, payload.isVerified),
        datasetByNumber,
        (d) => respond("success", { data: d.verification })
      ))
    .handle("setSyncFrequency", ({ path, payload }) =>
      change((p) => setDatasetSyncInterval(p, path.id, payload.syncInterval), datasetByNumber, respondDetail))
    .handle("syncFrequencyOptions", ({ path }) =>
      serve(
        (p) => visibleDataset(p, path.id),
        (d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } })
      ))
    // Datasets fed through the API are never synced: their history is always empty.
    .handle("syncHistory", ({ path, urlParams }) =>
      serve((p) => visibleDataset(p, path.id), () => {
          const { page, pageSize } = sliceOf(urlParams)
          return respond("success", { data: { items: [], pagination: { page, pageSize, totalItems: 0 } } })
        }))
    .handle("syncStatistics", ({ path }) =>
      serve((p) => visibleDataset(p, path.id), () =>
          respond("success", {
            data: { avgSuccessDuration: null, dailyStatistics: [], lastSuccessfulUpdateAt: null, successRate: null }
          })
        ))
    .handle("getLineage", ({ path }) =>
      serve(
        (p) => Effect.flatMap(visibleDataset(p, path.id), (d) => lineageOf(p, d)),
        (data) => respond("success", { data })
      )))
