/**
 * What a mutation made through the API did, from its method and path alone (and the id a
 * creation answered with): the activity log's `action`, `resourceType` and `resourceId`.
 * Routes added later are covered without naming them here: paths alternate collection and id
 * (`/v2/datasets/12/purge`), and the resource an entry is about is the first of them.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export interface ActivityOf {
  readonly action: string
  readonly resourceType: string | null
  readonly resourceId: string | null
}

/** Collection segments by the resource type they hold; others are camel-cased without their `s`. */
const collections: Readonly<Record<string, string>> = {
  "data-sources": "dataSource",
  datasets: "dataset",
  accounts: "account",
  users: "user",
  metrics: "metric",
  connections: "connection",
  boards: "board",
  integrations: "integration",
  modifications: "modification",
  blocks: "block"
}

const camel = (segment: string) => segment.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

const typeOf = (segment: string) => collections[segment] ?? camel(segment.replace(/s$/, ""))

const verbs: Readonly<Record<string, string>> = { POST: "created", PUT: "updated", PATCH: "updated", DELETE: "deleted" }

/**
 * The activity of a successful request, or undefined for one that changes nothing (reads)
 * or is not logged: ingestion (`POST .../data`) is the data itself, not a change of the
 * organization's setup, and has its own history (the dataset's ingestions).
 *
 * @since 0.1.0
 */
export const activityOf = (
  request: { readonly method: string; readonly path: string },
  actorId: number,
  createdId: string | null
): ActivityOf | undefined => {
  const verb = verbs[request.method]
  if (verb === undefined) return undefined
  const segments = request.path.split("?")[0]!.split("/").filter((s) => s !== "")
  if (segments.length < 2 || !/^v[0-9]+$/.test(segments[0]!)) return undefined
  const rest = segments.slice(1)
  const [top, id, sub] = rest as [string, string | undefined, string | undefined]
  const more = sub === undefined ? verb : request.method === "POST" ? camel(sub) : `${camel(sub)}.${verb}`
  switch (top) {
    case "organization":
      return { action: `organization.${id === undefined ? verb : `${camel(id)}.${verb}`}`, resourceType: "administration", resourceId: null }
    case "profile":
      return { action: `profile.${verb}`, resourceType: "user", resourceId: String(actorId) }
    case "billing":
      return { action: `billing.${verb}`, resourceType: "billing", resourceId: null }
  }
  const type = typeOf(top)
  if (id === undefined) return { action: `${type}.${verb}`, resourceType: type, resourceId: createdId }
  if (sub === undefined) return { action: `${type}.${verb}`, resourceType: type, resourceId: id }
  if (request.method === "POST" && sub === "data") return undefined
  // A creation under its parent (`POST /v1/accounts/{id}/data-sources`) is about what it made.
  const child = collections[sub]
  if (request.method === "POST" && rest.length === 3 && child !== undefined && createdId !== null) {
    return { action: `${child}.created`, resourceType: child, resourceId: createdId }
  }
  return { action: `${type}.${more}`, resourceType: type, resourceId: id }
}
