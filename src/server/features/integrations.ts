/**
 * The integrations catalog: a data file shipped with the package (`data/integrations.json`),
 * read and checked once, at the first request that needs it.
 *
 * @since 0.1.0
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Schema } from "effect"
import { IntegrationDetail } from "../../api/v2/integrations.js"
import { NotFound } from "../core/errors.js"
import { pageOfItems, type PageRequest } from "../core/paging.js"
import { matchesSearch, sortedBy } from "../core/store/order.js"
import type { SortOrder } from "../core/store/Store.js"

const Catalog = Schema.Struct({ items: Schema.Array(IntegrationDetail) })

/**
 * The catalog file: found upwards from this module, which runs from `src/` in development
 * and from `dist/src/` when installed.
 */
const catalogPath = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "data", "integrations.json")
    if (existsSync(candidate)) return candidate
    dir = dirname(dir)
  }
  throw new Error("data/integrations.json is missing from the package")
}

/** A catalog that does not load is a broken package: a defect, not a client's error. */
const catalog = Effect.runSync(Effect.cached(
  Effect.sync(() => JSON.parse(readFileSync(catalogPath(), "utf8")) as unknown).pipe(
    Effect.flatMap(Schema.decodeUnknown(Catalog)),
    Effect.map((c) => c.items),
    Effect.orDie
  )
))

/**
 * @since 0.1.0
 * @category models
 */
export interface IntegrationListParams extends PageRequest {
  readonly search?: string | undefined
  readonly sortBy?: "name" | undefined
  readonly sortOrder?: SortOrder | undefined
}

/**
 * A page of the catalog, searched by name or key, in catalog order unless sorted by name.
 *
 * @since 0.1.0
 * @category utils
 */
export const listIntegrations = (params: IntegrationListParams) =>
  Effect.map(catalog, (items) => {
    const matching = items.filter((i) => matchesSearch(i.name, params.search) || matchesSearch(i.key, params.search))
    const sorted = params.sortBy === undefined ? matching : sortedBy(matching, (i) => i.name, params.sortOrder ?? "asc")
    const page = pageOfItems(sorted, params)
    return { ...page, items: page.items.map(({ id, key, name, supportsDatasets }) => ({ id, key, name, supportsDatasets })) }
  })

/**
 * One integration of the catalog; `NotFound` for an unknown id.
 *
 * @since 0.1.0
 * @category utils
 */
export const getIntegration = (id: number) =>
  Effect.flatMap(catalog, (items) => {
    const found = items.find((i) => i.id === id)
    return found === undefined ? Effect.fail(new NotFound({ resource: "Integration", id })) : Effect.succeed(found)
  })
