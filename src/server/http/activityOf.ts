/**
 * What the activity log calls a change: its `action` from the route's method and path (the
 * resource's type and id come from what the handler reported, `activity.ts`). Paths alternate
 * collection and id (`/v2/datasets/12/purge`): the action names what was done to the resource
 * (`dataset.purge`, `dataset.columnMetadata.updated`), a creation under a parent
 * (`POST /v1/accounts/2/data-sources`) is the child's creation.
 *
 * @since 0.1.0
 */

/**
 * What a mutation changed, as its handler reports it: the resource's type and id as the log
 * names them (a dataset by its v2 number, a metric by its id as stored, never as a URL
 * carried it).
 *
 * @since 0.1.0
 * @category models
 */
export interface Changed {
  readonly resourceType: string
  readonly resourceId: string | number | null
}


/**
 * An entry's `action`, `resourceType` and `resourceId`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityOf {
  readonly action: string
  readonly resourceType: string | null
  readonly resourceId: string | null
}

const camel = (segment: string) => segment.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

const verbs: Readonly<Record<string, string>> = { POST: "created", PUT: "updated", PATCH: "updated", DELETE: "deleted" }

/**
 * The entry of a successful request that reported `changed`, or undefined for a method that
 * changes nothing or a path outside the API.
 *
 * @since 0.1.0
 * @category utils
 */
export const activityOf = (
  request: { readonly method: string; readonly path: string },
  actorId: number,
  changed: Changed
): ActivityOf | undefined => {
  const verb = verbs[request.method]
  if (verb === undefined) return undefined
  const segments = request.path.split("?")[0]!.split("/").filter((s) => s !== "")
  if (segments.length < 2 || !/^v[0-9]+$/.test(segments[0]!)) return undefined
  const [top, id, sub] = segments.slice(1) as [string, string | undefined, string | undefined]
  const type = changed.resourceType
  const resourceId = changed.resourceId === null ? null : String(changed.resourceId)
  switch (top) {
    case "organization":
      return { action: `organization.${id === undefined ? verb : `${camel(id)}.${verb}`}`, resourceType: type, resourceId }
    case "profile":
      return { action: `profile.${verb}`, resourceType: type, resourceId: resourceId ?? String(actorId) }
  }
  // `/v2/datasets/5` or a creation under a parent: the verb alone.
  if (sub === undefined || segments.length === 4 && request.method === "POST" && type !== singular(top)) {
    return { action: `${type}.${verb}`, resourceType: type, resourceId }
  }
  const more = request.method === "POST" ? camel(sub) : `${camel(sub)}.${verb}`
  return { action: `${type}.${more}`, resourceType: type, resourceId }
}

/** A collection segment's resource type: `data-sources` is `dataSource`. */
const singular = (segment: string) => camel(segment.replace(/s$/, ""))
