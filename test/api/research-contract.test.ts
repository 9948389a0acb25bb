/**
 * Every v2 answer schema of the contract against the shapes research/databox-api.md §3 and §4
 * recorded from the real service, field by field: names, nullability and optionality, nested
 * objects included. A field we add or leave out must be listed below with its reason (and in
 * docs/decisions.md); anything else that differs fails.
 */
import { describe, expect, it } from "vitest"
import { TributaryApi } from "../../src/api/index.js"
import { fieldPaths, v2Payloads } from "./shapes.js"

const statusInfo = (prefix: string) =>
  ["status", "statusCode|null", "errorType|null", "reason|null", "description|null", "userAction|null"].map((f) => `${prefix}.${f}`)
const userRef = (prefix: string) => [`${prefix}.id`, `${prefix}.name`]
const schemaColumn = (prefix: string) => ["id", "displayName", "dataType", "order", "visible"].map((f) => `${prefix}.${f}`)

/** §4.8 */
const dataSourceListItem = [
  "id", "name", "integrationKey|null", "connectionId|null", "createdAt|null", "lastActivityAt|null", "timezone|null",
  "statusInfo", ...statusInfo("statusInfo")
]
/** §4.9 */
const datasetListItem = [
  "id", "name", "dataSourceId|null", "createdAt|null", "lastActivityAt|null", "timezone|null", "ingestionSupported",
  "statusInfo|null", ...statusInfo("statusInfo"),
  "syncInfo|null", "syncInfo.initiatedAt|null", "syncInfo.lastSuccessfulSyncAt|null", "syncInfo.status|null", "syncInfo.type|null",
  "verificationInfo|null", "verificationInfo.isVerified",
  "ingestionInfo|null", "ingestionInfo.lastIngestionAt|null", "ingestionInfo.lastStatus|null"
]
const verificationDetail = (prefix: string) =>
  [`${prefix}isVerified`, `${prefix}verifiedAt|null`, `${prefix}verifiedBy|null`, ...userRef(`${prefix}verifiedBy`)]

const lineage = ["id", "parents", "children", ...["parents", "children"].flatMap((p) => ["id", "name", "type"].map((f) => `${p}[].${f}`))]
const valueLabel = (prefix: string) => [`${prefix}.value`, `${prefix}.label`]
/** §4.1, §4.4: `metadata {department, title, role}|null`, the inner nullability not recorded. */
const userMetadataFields = (prefix: string) => ["department", "title", "role"].map((f) => `${prefix}.${f}`)
const userMetadata = (prefix: string) => [`${prefix}|null`, ...userMetadataFields(prefix)]
/** §4.2 fields recorded without nullability. */
const orgUnstated = [
  "companyName", "websiteUrl", "taxNumber", "billingName",
  ...["street", "zip", "city", "state", "country"].map((f) => `address.${f}`),
  ...["dateFormat", "numberFormat", "firstDayOfWeek", "calendar"].map((f) => `settings.${f}`),
  "metadata.companySize", "metadata.annualRevenue"
]
/** §1 */
const accountListItem = ["id", "name", "isSelfManaged", "managedBy|null", ...userRef("managedBy")]
/** §4.4 */
const userListItem = ["id", "name", "email", "role"]
/** §4.5 */
const connectionListItem = [
  "id", "name", "integrationKey|null", "managedBy|null", ...userRef("managedBy"), "sharedWithAccounts",
  "statusInfo", "statusInfo.status", "statusInfo.reason|null", "statusInfo.description|null", "statusInfo.userAction|null"
]
/** §4.6 */
const integrationListItem = ["id", "key", "name", "supportsDatasets"]
/** §4.12 */
const metricListItem = [
  "id", "name", "sourceId|null", "dimensions", "dimensions[].id", "dimensions[].displayName", "supportsDrilldown",
  "verificationInfo|null", "verificationInfo.isVerified"
]

/** The research's shapes, by the schema identifier of the payload (a page's item for lists). */
const research: Readonly<Record<string, ReadonlyArray<string>>> = {
  DataSourceListItem: dataSourceListItem,
  DataSourceDetail: [...dataSourceListItem, "managedBy|null", ...userRef("managedBy"), "syncInterval|null"],
  DatasetListItem: datasetListItem,
  DatasetDetail: [
    ...datasetListItem.filter((f) => !f.startsWith("ingestionInfo") && !f.startsWith("verificationInfo")),
    "columnCount", "rowCount", "size|null", "maxSize|null", "syncInterval|null", "managedBy|null", ...userRef("managedBy"),
    "ingestionInfo|null", "ingestionInfo.initiatedAt|null", "ingestionInfo.lastSuccessfulIngestionAt|null", "ingestionInfo.status|null",
    "verificationInfo|null", ...verificationDetail("verificationInfo.").slice(0)
  ],
  // §4 shared sub-objects
  Permissions: ["accessLevel", "accessList|null", ...userRef("accessList[]")],
  SyncFrequencyOptions: ["items", ...["syncInterval", "label", "isDefault", "isSelected", "availability"].map((f) => `items[].${f}`)],
  VerificationDetail: verificationDetail(""),
  // §4.9
  DatasetSchema: ["items", ...schemaColumn("items[]"), "primaryKey|null?"],
  DatasetRows: [
    "items|null", "pagination", "pagination.page", "pagination.pageSize", "pagination.totalItems",
    "schema|null", ...schemaColumn("schema[]"), "lastUpdatedAt|null"
  ],
  SyncHistoryItem: ["id", "initiatedAt|null", "status", "type|null", "duration|null", "error|null", "error.title", "error.description"],
  SyncStatistics: ["avgSuccessDuration", "dailyStatistics", "dailyStatistics[].date", "dailyStatistics[].status", "lastSuccessfulUpdateAt", "successRate"],
  DatasetLineage: lineage,
  // §4.10
  DatasetMetadata: ["description|null", "synonyms|null", "defaultTimeDimension|null"],
  ColumnMetadataList: ["items", ...["id", "displayName", "description|null", "conceptType|null", "synonyms|null"].map((f) => `items[].${f}`)],
  // §3
  IngestAccepted: ["ingestionId", "status", "message"],
  IngestionListItem: ["id", "status", "initiatedAt|null", "initiatedBy|null", ...userRef("initiatedBy"), "duration|null"],
  IngestionDetail: [
    "id", "status", "initiatedAt|null", "initiatedBy|null", ...userRef("initiatedBy"), "duration|null",
    "summary|null", "summary.ingestion|null",
    ...["receivedRecordCount", "appendedRecordCount", "overwrittenRecordCount", "rejectedRecordCount"].map((f) => `summary.ingestion.${f}`),
    "summary.dataset|null", ...["columnCount", "rowCount", "size"].map((f) => `summary.dataset.${f}`),
    "errors|null", "errors[].code|null", "errors[].field|null", "errors[].message|null", "errors[].record"
  ],
  IngestionStatistics: ["avgSuccessDuration|null", "dailyStatistics|null", "dailyStatistics[].date", "dailyStatistics[].status", "lastSuccessfulIngestionAt|null", "successRate|null"],
  // §7
  V2TimezonesResponse: ["items", "items[].timezone", "items[].offset"],
  // §4.1
  ProfileResponse: [
    "id", "name", "email", "role", "timezone|null", "createdAt", "isEmailVerified", ...userMetadata("metadata"),
    "organization", "organization.id|null", "organization.name|null", "account|null", "account.id", "account.name|null"
  ],
  ProfileMetadataOptions: ["departments", ...valueLabel("departments[]"), "departments[].roles", ...valueLabel("departments[].roles[]")],
  // §4.2
  OrganizationResponse: [
    "id", "name", "companyName", "websiteUrl", "taxNumber", "billingName", "managedBy|null", ...userRef("managedBy"),
    "address|null", ...["street", "zip", "city", "state", "country"].map((f) => `address.${f}`),
    "settings|null", ...["dateFormat", "numberFormat", "firstDayOfWeek", "calendar"].map((f) => `settings.${f}`),
    "settings.fiscalYearStart|null", "settings.fiscalYearStart.month", "settings.fiscalYearStart.day",
    "metadata|null", "metadata.industry|null", "metadata.businessType|null", "metadata.companySize", "metadata.annualRevenue"
  ],
  OrganizationUsage: [
    ...["users", "dataSources", "accounts"].flatMap((f) => [f, `${f}.count`, `${f}.limit|null`]),
    "aiCredits|null", ...["used", "limit", "remaining", "resetsAt"].map((f) => `aiCredits.${f}|null`), "aiCredits.state"
  ],
  CountriesResponse: ["items", "items[].code", "items[].name"],
  OrganizationMetadataOptions: ["industries", "businessTypes", "companySizes", "annualRevenues"].flatMap((f) => [f, ...valueLabel(`${f}[]`)]),
  ActivityLogItem: [
    "id", "action", "createdAt", "isSystem", "resourceType|null", "resourceId|null", "user|null", ...userRef("user"), "details|null"
  ],
  // §1 (v2 accounts)
  AccountListItem: accountListItem,
  AccountDetail: [...accountListItem, "companyName|null", "createdAt|null", "websiteUrl|null"],
  // §4.3
  BillingResponse: ["planName", "planStatus", "billingPeriod|null", "billingEmail|null"],
  Invoice: ["invoiceId|null", "date|null", "amount", "status", "receiptNumber|null", "downloadUrl|null"],
  // §4.4
  UserListItem: userListItem,
  UserDetail: [
    ...userListItem, "timezone|null", "createdAt|null", "lastSeenAt|null", "isAdminApproved", "isEmailVerified", ...userMetadata("metadata")
  ],
  // §4.5 (statusInfo: the shared StatusInfo's nullability, §4)
  ConnectionListItem: connectionListItem,
  ConnectionDetail: [...connectionListItem, "accessLevel", "accessList|null", ...userRef("accessList[]"), "createdAt|null", "dataSourcesCount"],
  ConnectionPermissions: ["accessLevel", "accessList|null", ...userRef("accessList[]"), "sharedWithAccounts"],
  // §4.6
  IntegrationListItem: integrationListItem,
  IntegrationDetail: [...integrationListItem, "avatar|null", "categories", "description|null", "supportsMetricBuilder"],
  // §4.7
  BoardListItem: ["id", "name", "tags", "integrationKeys"],
  BoardMetrics: [
    "datablocks", ...["id", "name", "visualizationType|null", "metrics"].map((f) => `datablocks[].${f}`),
    ...[
      "id", "name", "sourceId", "sourceName", "dimensions", "dimensions[].id", "dimensions[].displayName",
      "dateRange", "dateRange.from", "dateRange.to", "dateRange.granularity",
      "appliedFilters|null", "appliedFilters.logicalOperator", "appliedFilters.groups", "appliedFilters.groups[].logicalOperator",
      "appliedFilters.groups[].conditions", ...["type", "field", "operator", "values"].map((f) => `appliedFilters.groups[].conditions[].${f}`)
    ].map((f) => `datablocks[].metrics[].${f}`)
  ],
  // §4.11
  DatasetModificationResponse: ["filters", "formulas", "displayNames", "dataTypes", "order", "visibility"],
  ModificationPreview: ["items", "pagination", "pagination.totalItems", "schema"],
  ModificationRules: [
    "filterRules", "dataTypeRules", "dataTypeRules.conversionsByPhysicalType", "dataTypeRules.outputFormats",
    ...["byLogicalType", "scalableLogicalTypes", "scaleOptions"].map((f) => `dataTypeRules.outputFormats.${f}`),
    ...["id", "displayName", "example"].map((f) => `dataTypeRules.outputFormats.scaleOptions[].${f}`)
  ],
  ModificationFunctionsResponse: [
    "items", ...["name", "signature", "description", "example|null", "parameters"].map((f) => `items[].${f}`),
    ...["name", "description", "isOptional"].map((f) => `items[].parameters[].${f}`)
  ],
  // §4.12
  MetricListItem: metricListItem,
  MetricDetail: [
    ...metricListItem.filter((f) => !f.startsWith("verificationInfo")), "verificationInfo|null", ...verificationDetail("verificationInfo."),
    "type", "measure|null", "measure.id", "measure.displayName", "date|null", "date.id", "date.displayName", "aggregationFunction|null",
    "filters|null", "filters.logicalOperator", "filters.conditions", ...["field", "operator", "values"].map((f) => `filters.conditions[].${f}`),
    "availableGranularities", "isAggregatable"
  ],
  DimensionValues: ["dimensionValues"],
  DrilldownPage: [
    "items|null", "schema|null", "schema.items", ...["id", "displayName", "dataType"].map((f) => `schema.items[].${f}`),
    "pagination", "pagination.page", "pagination.pageSize", "pagination.totalItems"
  ],
  MetricUsagesResponse: ["items", ...["referenceType", "referenceId", "referenceName", "datablockName|null"].map((f) => `items[].${f}`)],
  MetricLineage: lineage
}

/** Where ours differ on purpose: field paths as research writes them, and ours. Each is in docs/decisions.md. */
const deviations: Readonly<Record<string, { readonly research: ReadonlyArray<string>; readonly ours: ReadonlyArray<string>; readonly why: string }>> = {
  DatasetDetail: {
    research: [],
    ours: ["uuid"],
    why: "the dataset's v1 id beside its v2 number, so that one dataset can be named in both APIs"
  },
  DatasetRows: {
    research: ["items|null", "schema|null"],
    ours: ["items", "schema"],
    why: "an ingestion dataset always has rows (possibly none) and a schema; the typed row walk relies on items"
  },
  SyncHistoryItem: {
    research: ["error.description"],
    ours: ["error.description|null"],
    why: "the research does not say; a failed ingestion may have no further description"
  },
  SyncStatistics: {
    research: ["avgSuccessDuration", "lastSuccessfulUpdateAt", "successRate"],
    ours: ["avgSuccessDuration|null", "lastSuccessfulUpdateAt|null", "successRate|null"],
    why: "the research gives no nullability; as for ingestion statistics (§3.4), null before any success"
  },
  OrganizationResponse: {
    research: [...orgUnstated],
    ours: orgUnstated.map((f) => `${f}|null`),
    why: "the research gives no nullability for these; an organization that has not filled one in has null, not \"\""
  },
  UserDetail: {
    research: userMetadataFields("metadata"),
    ours: userMetadataFields("metadata").map((f) => `${f}|null`),
    why: "the research gives no inner nullability; each metadata field is cleared to null on its own (\"\" clears)"
  },
  ProfileResponse: {
    research: ["createdAt", ...userMetadataFields("metadata")],
    ours: ["createdAt|null", ...userMetadataFields("metadata").map((f) => `${f}|null`)],
    why: "the profile is the caller's user record, whose createdAt is null for users stored before it was recorded, as UserDetail.createdAt|null (§4.4); metadata as UserDetail"
  },
  ModificationPreview: {
    research: [],
    ours: schemaColumn("schema[]"),
    why: "the research names schema without its fields; ours are the dataset schema's columns as in the rows answer (§4.9)"
  },
  BoardMetrics: {
    research: ["datablocks[].metrics[].sourceName"],
    ours: ["datablocks[].metrics[].sourceName|null"],
    why: "the research gives no nullability; null when the caller may not see the metric's (private) data source"
  }
}

/** Answers the research gives no field list for (they carry ours, documented in the spec or decisions). */
const unspecified: Readonly<Record<string, string>> = {
  V2ValidateKeyResponse: "§4.1 names the route, not its payload",
  V2MessageResponse: "§4: deletes and purges may answer an empty body; ours answer {message} as v1 does",
  DatasetMessageResponse: "as V2MessageResponse",
  MetricMessageResponse: "as V2MessageResponse (DELETE /v2/metrics/{id})",
  ConnectionMessageResponse: "as V2MessageResponse (DELETE /v2/connections/{id})",
  MetricValues: "POST /v2/metrics/{id}/values is ours (time series of a dataset metric); the research records no such route"
}

const expected = (name: string): ReadonlyArray<string> => {
  const deviation = deviations[name]
  const fields = research[name]!
  return deviation === undefined
    ? fields
    : [...fields.filter((f) => !deviation.research.includes(f)), ...deviation.ours]
}

const payloads = v2Payloads(TributaryApi)

describe("v2 answer schemas against the research shapes (§3, §4)", () => {
  it("finds the v2 routes", () => {
    expect(payloads.length).toBeGreaterThan(30)
  })

  it("every v2 answer payload has a research shape or a stated reason why not", () => {
    const unknown = payloads.filter((p) => research[p.name] === undefined && unspecified[p.name] === undefined)
    expect(unknown.map((p) => `${p.route}: ${p.name}`)).toEqual([])
  })

  for (const payload of payloads.filter((p) => research[p.name] !== undefined)) {
    it(`${payload.route} (${payload.name}) has the research's fields`, () => {
      const ours = [...fieldPaths(payload.ast)].sort()
      expect(ours).toEqual([...expected(payload.name)].sort())
    })
  }

  it("every deviation still differs from the research (a stale entry is removed)", () => {
    for (const [name, deviation] of Object.entries(deviations)) {
      for (const field of deviation.research) expect(research[name], name).toContain(field)
      for (const field of deviation.ours) expect(research[name], name).not.toContain(field)
      expect(deviation.why.length).toBeGreaterThan(0)
    }
  })
})
