/**
 * Every operation of the specification's v1 and v2 tables (spec/ingestion-api-v1-v2.md, its
 * route tables as they stand) is in the contract, and so in `/openapi.json`, the server and
 * the typed client.
 */
import { OpenApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { TributaryApi } from "../../src/api/index.js"

/** Method and path of each operation of the specification's tables. */
const specOperations = [
  "GET /v1/auth/validate-key",
  "GET /v1/accounts",
  "GET /v1/accounts/{accountId}/data-sources",
  "GET /v1/accounts/timezones",
  "POST /v1/data-sources",
  "DELETE /v1/data-sources/{dataSourceId}",
  "GET /v1/data-sources/{dataSourceId}/datasets",
  "POST /v1/datasets",
  "DELETE /v1/datasets/{datasetId}",
  "POST /v1/datasets/{datasetId}/purge",
  "POST /v1/datasets/{datasetId}/data",
  "GET /v1/datasets/{datasetId}/ingestions",
  "GET /v1/datasets/{datasetId}/ingestions/{ingestionId}",
  "GET /v2/accounts",
  "POST /v2/accounts",
  "GET /v2/accounts/{id}",
  "PATCH /v2/accounts/{id}",
  "DELETE /v2/accounts/{id}",
  "GET /v2/auth/validate-key",
  "GET /v2/billing",
  "GET /v2/billing/invoices",
  "GET /v2/connections",
  "GET /v2/connections/{id}",
  "PATCH /v2/connections/{id}",
  "DELETE /v2/connections/{id}",
  "GET /v2/connections/{id}/permissions",
  "PUT /v2/connections/{id}/permissions",
  "GET /v2/data-sources",
  "POST /v2/data-sources",
  "GET /v2/data-sources/{id}",
  "PATCH /v2/data-sources/{id}",
  "DELETE /v2/data-sources/{id}",
  "GET /v2/data-sources/{id}/permissions",
  "PUT /v2/data-sources/{id}/permissions",
  "POST /v2/data-sources/{id}/purge",
  "PUT /v2/data-sources/{id}/sync-frequency",
  "GET /v2/data-sources/{id}/sync-frequency-options",
  "PUT /v2/data-sources/{id}/timezone",
  "GET /v2/boards",
  "GET /v2/boards/{id}/metrics",
  "GET /v2/datasets",
  "POST /v2/datasets",
  "GET /v2/datasets/{id}",
  "PATCH /v2/datasets/{id}",
  "DELETE /v2/datasets/{id}",
  "GET /v2/datasets/{id}/column-metadata",
  "PATCH /v2/datasets/{id}/column-metadata",
  "GET /v2/datasets/{id}/data",
  "POST /v2/datasets/{id}/data",
  "POST /v2/datasets/{id}/duplicate",
  "GET /v2/datasets/{id}/ingestion-statistics",
  "GET /v2/datasets/{id}/ingestions",
  "GET /v2/datasets/{id}/ingestions/{ingestionId}",
  "GET /v2/datasets/{id}/lineage",
  "GET /v2/datasets/{id}/metadata",
  "PATCH /v2/datasets/{id}/metadata",
  "GET /v2/datasets/{id}/modifications",
  "PUT /v2/datasets/{id}/modifications",
  "DELETE /v2/datasets/{id}/modifications",
  "POST /v2/datasets/{id}/modifications/preview",
  "GET /v2/datasets/{id}/permissions",
  "PUT /v2/datasets/{id}/permissions",
  "POST /v2/datasets/{id}/purge",
  "GET /v2/datasets/{id}/schema",
  "PUT /v2/datasets/{id}/sync-frequency",
  "GET /v2/datasets/{id}/sync-frequency-options",
  "GET /v2/datasets/{id}/sync-history",
  "GET /v2/datasets/{id}/sync-history/statistics",
  "PUT /v2/datasets/{id}/timezone",
  "GET /v2/datasets/{id}/verification",
  "PUT /v2/datasets/{id}/verification",
  "GET /v2/datasets/modifications/functions",
  "GET /v2/datasets/modifications/rules",
  "GET /v2/integrations",
  "GET /v2/integrations/{id}",
  "GET /v2/metrics",
  "POST /v2/metrics",
  "GET /v2/metrics/{id}",
  "PATCH /v2/metrics/{id}",
  "DELETE /v2/metrics/{id}",
  "GET /v2/metrics/{id}/lineage",
  "GET /v2/metrics/{id}/usages",
  "GET /v2/metrics/{id}/verification",
  "PUT /v2/metrics/{id}/verification",
  "POST /v2/metrics/dimensions/values",
  "POST /v2/metrics/drilldown",
  "GET /v2/organization",
  "PATCH /v2/organization",
  "GET /v2/organization/activity-log",
  "GET /v2/organization/countries",
  "GET /v2/organization/metadata-options",
  "GET /v2/organization/timezones",
  "GET /v2/organization/usage",
  "GET /v2/profile",
  "PATCH /v2/profile",
  "GET /v2/profile/metadata-options",
  "GET /v2/users",
  "POST /v2/users",
  "GET /v2/users/{id}",
  "PATCH /v2/users/{id}",
  "DELETE /v2/users/{id}"
]

const shape = (path: string) => path.replace(/\{[^}]+\}/g, "{}")

describe("the specification's routes", () => {
  it("every operation of the v1 and v2 tables is in the OpenAPI document", () => {
    const document = OpenApi.fromApi(TributaryApi)
    const served = new Set<string>()
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of ["get", "post", "put", "patch", "delete"] as const) {
        if ((item as Record<string, unknown>)[method] !== undefined) served.add(`${method.toUpperCase()} ${shape(path)}`)
      }
    }
    expect(specOperations.length).toBe(101)
    expect(specOperations.filter((operation) => {
      const [method, path] = operation.split(" ")
      return !served.has(`${method} ${shape(path!)}`)
    })).toEqual([])
  })
})
