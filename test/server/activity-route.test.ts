/**
 * The pure cores of the organization routes: what the activity log says a request did, and
 * the profile metadata rules.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { activityOf } from "../../src/server/http/activityOf.js"
import { mergeOrganization, mergeUserMetadata } from "../../src/server/features/organization/profiles.js"
import { emptyOrganizationProfile } from "../../src/server/core/store/Store.js"

describe("activityOf", () => {
  const of = (method: string, path: string, resourceType: string, resourceId: string | number | null) =>
    activityOf({ method, path }, 7, { resourceType, resourceId })

  it("names the action from the route; the resource is what the handler reported", () => {
    expect(of("POST", "/v2/data-sources", "dataSource", 12)).toEqual({ action: "dataSource.created", resourceType: "dataSource", resourceId: "12" })
    expect(of("PATCH", "/v2/datasets/5", "dataset", 5)).toEqual({ action: "dataset.updated", resourceType: "dataset", resourceId: "5" })
    // A dataset changed through its UUID is named by the number the handler reported.
    expect(of("DELETE", "/v1/datasets/0b5c7a7e-0000-4000-8000-000000000001", "dataset", 9))
      .toEqual({ action: "dataset.deleted", resourceType: "dataset", resourceId: "9" })
    expect(of("POST", "/v2/data-sources/4/purge", "dataSource", 4)).toEqual({ action: "dataSource.purge", resourceType: "dataSource", resourceId: "4" })
    expect(of("PUT", "/v2/datasets/5/column-metadata", "dataset", 5)).toEqual({
      action: "dataset.columnMetadata.updated",
      resourceType: "dataset",
      resourceId: "5"
    })
    expect(of("POST", "/v1/accounts/2/data-sources", "dataSource", 9)).toEqual({ action: "dataSource.created", resourceType: "dataSource", resourceId: "9" })
    // The id as stored, not as the URL carried it.
    expect(of("PATCH", "/v2/metrics/1%7Ccustom_query_1", "metric", "1|custom_query_1"))
      .toEqual({ action: "metric.updated", resourceType: "metric", resourceId: "1|custom_query_1" })
  })

  it("knows the singletons, routes it was never told about, and what is not the API", () => {
    expect(of("PATCH", "/v2/organization", "administration", null)).toEqual({ action: "organization.updated", resourceType: "administration", resourceId: null })
    expect(of("PATCH", "/v2/profile", "user", 7)).toEqual({ action: "profile.updated", resourceType: "user", resourceId: "7" })
    expect(of("POST", "/v2/boards/3/blocks", "block", 8)).toEqual({ action: "block.created", resourceType: "block", resourceId: "8" })
    expect(of("PUT", "/v2/widgets/1/layout?x=1", "widget", 1)).toEqual({ action: "widget.layout.updated", resourceType: "widget", resourceId: "1" })
    expect(of("GET", "/v2/data-sources", "dataSource", 1)).toBeUndefined()
    expect(of("POST", "/openapi.json", "x", 1)).toBeUndefined()
  })
})

describe("profile and organization rules", () => {
  it("a job role must belong to the department; \"\" clears; a role cannot outlive its department", () => {
    const set = mergeUserMetadata(null, { department: "sales", role: "salesOps" })
    expect(set).toEqual(Either.right({ department: "sales", title: null, role: "salesOps" }))
    const stored = Either.getOrThrow(set)!
    expect(Either.getLeft(mergeUserMetadata(stored, { role: "cto" })).pipe((e) => e._tag === "Some" && e.value.field)).toBe("metadata.role")
    expect(Either.getLeft(mergeUserMetadata(stored, { department: "" })).pipe((e) => e._tag === "Some" && e.value.field)).toBe("metadata.role")
    expect(mergeUserMetadata(stored, { department: "", role: null })).toEqual(Either.right(null))
  })

  it("fiscal years need a fiscal calendar and a real day", () => {
    const fiscal = mergeOrganization(emptyOrganizationProfile, { settings: { calendar: "customFiscal", fiscalYearStart: { month: 2, day: 29 } } })
    expect(Either.isRight(fiscal)).toBe(true)
    expect(Either.isLeft(mergeOrganization(emptyOrganizationProfile, { settings: { fiscalYearStart: { month: 1, day: 1 } } }))).toBe(true)
    expect(Either.isLeft(mergeOrganization(emptyOrganizationProfile, { settings: { calendar: "weekAlignedFiscal", fiscalYearStart: { month: 4, day: 31 } } })))
      .toBe(true)
  })
})
