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
  DatasetLineage: ["id", "parents", "children", ...["parents", "children"].flatMap((p) => ["id", "name", "type"].map((f) => `${p}[].${f}`))],
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
  V2TimezonesResponse: ["items", "items[].timezone", "items[].offset"]
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
  }
}

/** Answers the research gives no field list for (they carry ours, documented in the spec or decisions). */
const unspecified: Readonly<Record<string, string>> = {
  V2ValidateKeyResponse: "§4.1 names the route, not its payload",
  V2MessageResponse: "§4: deletes and purges may answer an empty body; ours answer {message} as v1 does",
  DatasetMessageResponse: "as V2MessageResponse"
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
