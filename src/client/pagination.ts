/**
 * v2 lists as streams: every page, fetched one after the other as the stream is pulled.
 *
 * ```ts
 * const names = yield* allDataSources(client, { sortBy: "name" }).pipe(
 *   Stream.map((d) => d.name),
 *   Stream.runCollect
 * )
 * ```
 *
 * Pages are zero-indexed (`page` 0, 1, ...). The walk stops after the page that reaches
 * `totalItems`, or at the first empty page. Lists are paged by offset, so items created or
 * deleted while a walk is under way may shift between pages (an item may be seen twice or
 * not at all); sort by a stable field such as `createdAt` for the steadiest order.
 *
 * @since 0.1.0
 */
import { Chunk, Effect, Option, Stream } from "effect"
import type * as V2 from "../api/v2/index.js"
import type { TributaryClientService } from "./Client.js"

/**
 * What a v2 list answer carries: `data.items` and `data.pagination`.
 *
 * @since 0.1.0
 * @category models
 */
export interface PageAnswer<A> {
  readonly data: {
    readonly items: ReadonlyArray<A>
    readonly pagination: { readonly page: number; readonly pageSize: number; readonly totalItems: number }
  }
}

/**
 * Whether another page follows `page` (zero-indexed) of an answer with these items.
 *
 * @since 0.1.0
 * @category guards
 */
export const hasNextPage = (
  page: number,
  itemCount: number,
  pagination: { readonly pageSize: number; readonly totalItems: number }
): boolean => itemCount > 0 && pagination.pageSize > 0 && (page + 1) * pagination.pageSize < pagination.totalItems

/**
 * Every item of a paged list, page 0 first. `fetchPage` is called lazily, once per page.
 *
 * @since 0.1.0
 * @category constructors
 */
export const pages = <A, E, R>(
  fetchPage: (page: number) => Effect.Effect<PageAnswer<A>, E, R>
): Stream.Stream<A, E, R> =>
  Stream.paginateChunkEffect(0, (page: number) =>
    Effect.map(fetchPage(page), ({ data }) =>
      [
        Chunk.fromIterable(data.items),
        hasNextPage(page, data.items.length, data.pagination) ? Option.some(page + 1) : Option.none()
      ] as const))

/** The largest page v2 lists serve: fewest round trips. */
const walkPageSize = 100

/**
 * Filters and sorting of `GET /v2/data-sources` (everything but the page).
 *
 * @since 0.1.0
 * @category models
 */
export type DataSourceFilter = Omit<typeof V2.DataSources.DataSourceListParams.Type, "page">

/**
 * Filters and sorting of `GET /v2/datasets` (everything but the page).
 *
 * @since 0.1.0
 * @category models
 */
export type DatasetFilter = Omit<typeof V2.Datasets.DatasetListParams.Type, "page">

/**
 * Every data source visible to the client's key.
 *
 * @since 0.1.0
 * @category constructors
 */
export const allDataSources = (client: TributaryClientService, params: DataSourceFilter = {}) =>
  pages((page) =>
    client.v2.v2DataSources.list({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } })
  )

/**
 * Every dataset visible to the client's key (of one data source with `dataSourceId`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const allDatasets = (client: TributaryClientService, params: DatasetFilter = {}) =>
  pages((page) => client.v2.v2Datasets.list({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } }))

/**
 * Every ingestion of a dataset, newest first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const allIngestions = (
  client: TributaryClientService,
  datasetId: number | string,
  params: { readonly pageSize?: number | undefined } = {}
) =>
  pages((page) =>
    client.v2.v2Datasets.listIngestions({ path: { id: datasetId }, urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } })
  )

/**
 * Every stored row of a dataset (pages of up to 1000 rows).
 *
 * @since 0.1.0
 * @category constructors
 */
export const allRows = (
  client: TributaryClientService,
  datasetId: number | string,
  params: Omit<typeof V2.Datasets.DataParams.Type, "page"> = {}
) =>
  pages((page) =>
    client.v2.v2Datasets.getData({ path: { id: datasetId }, urlParams: { ...params, pageSize: params.pageSize ?? 1000, page } })
  )

/**
 * Every account of the organization.
 *
 * @since 0.1.0
 * @category constructors
 */
export const allAccounts = (client: TributaryClientService, params: Omit<typeof V2.Accounts.AccountListParams.Type, "page"> = {}) =>
  pages((page) => client.v2.v2Accounts.list({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } }))

/**
 * Every user of the organization (admins only).
 *
 * @since 0.1.0
 * @category constructors
 */
export const allUsers = (client: TributaryClientService, params: Omit<typeof V2.Users.UserListParams.Type, "page"> = {}) =>
  pages((page) => client.v2.v2Users.list({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } }))

/**
 * The organization's activity log, newest first (admins only).
 *
 * @since 0.1.0
 * @category constructors
 */
export const allActivity = (
  client: TributaryClientService,
  params: Omit<typeof V2.Organization.ActivityLogParams.Type, "page"> = {}
) =>
  pages((page) =>
    client.v2.v2Organization.activityLog({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } })
  )

/**
 * Every invoice of the organization (admins only).
 *
 * @since 0.1.0
 * @category constructors
 */
export const allInvoices = (client: TributaryClientService, params: { readonly pageSize?: number | undefined } = {}) =>
  pages((page) => client.v2.v2Billing.invoices({ urlParams: { ...params, pageSize: params.pageSize ?? walkPageSize, page } }))
