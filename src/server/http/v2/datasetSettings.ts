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
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { sliceOf } from "../../core/paging.js"
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

/** @since 0.1.0 */
export const V2DatasetSettingsLive = HttpApiBuilder.group(TributaryApi, "v2DatasetSettings", (handlers) =>
  handlers
    .handle("getMetadata", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.metadata })),
        present
      ))
    .handle("updateMetadata", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => updateMetadata(p, path.id, payload)),
        Effect.flatMap((d) => respond("success", { data: d.metadata })),
        present
      ))
    .handle("getColumnMetadata", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: columnMetadataItems(d) } })),
        present
      ))
    .handle("updateColumnMetadata", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => updateColumnMetadata(p, path.id, payload.columns)),
        Effect.flatMap((d) => respond("success", { data: { items: columnMetadataItems(d) } })),
        present
      ))
    .handle("setTimezone", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setDatasetTimezone(p, path.id, payload.timezone, payload.purgeData === true)),
        Effect.flatMap(respondDetail),
        present
      ))
    .handle("getPermissions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.permissions })),
        present
      ))
    .handle("setPermissions", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setDatasetPermissions(p, path.id, payload)),
        Effect.flatMap((d) => respond("success", { data: d.permissions })),
        present
      ))
    .handle("getVerification", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: d.verification })),
        present
      ))
    .handle("setVerification", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setVerification(p, path.id, payload.isVerified)),
        Effect.flatMap((d) => respond("success", { data: d.verification })),
        present
      ))
    .handle("setSyncFrequency", ({ path, payload }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => setDatasetSyncInterval(p, path.id, payload.syncInterval)),
        Effect.flatMap(respondDetail),
        present
      ))
    .handle("syncFrequencyOptions", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap((d) => respond("success", { data: { items: syncFrequencyOptions(d.syncInterval) } })),
        present
      ))
    // Datasets fed through the API are never synced: their history is always empty.
    .handle("syncHistory", ({ path, urlParams }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap(() => {
          const { page, pageSize } = sliceOf(urlParams)
          return respond("success", { data: { items: [], pagination: { page, pageSize, totalItems: 0 } } })
        }),
        present
      ))
    .handle("syncStatistics", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => visibleDataset(p, path.id)),
        Effect.flatMap(() =>
          respond("success", {
            data: { avgSuccessDuration: null, dailyStatistics: [], lastSuccessfulUpdateAt: null, successRate: null }
          })
        ),
        present
      ))
    .handle("getLineage", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((p) => Effect.flatMap(visibleDataset(p, path.id), (d) => lineageOf(p, d))),
        Effect.flatMap((data) => respond("success", { data })),
        present
      )))
