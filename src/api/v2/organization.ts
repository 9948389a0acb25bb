/**
 * The authenticated organization: `/v2/organization` (profile, settings, address and business
 * metadata), its activity log, usage against its limits, and the lists its fields take values
 * from (countries, metadata options, time zones).
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Timestamp, TimezoneEntry } from "../common.js"
import { Forbidden } from "../errors.js"
import { DataResponse, Name, PageParams, PageResponse, UserRef } from "./common.js"

/**
 * @since 0.1.0
 * @category models
 */
export const TimezonesResponse = DataResponse(
  Schema.Struct({ items: Schema.Array(TimezoneEntry) }),
  "V2TimezonesResponse"
)

/**
 * @since 0.1.0
 * @category models
 */
export const Address = Schema.Struct({
  street: Schema.NullOr(Schema.String),
  zip: Schema.NullOr(Schema.String),
  city: Schema.NullOr(Schema.String),
  state: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String)
}).annotations({ identifier: "OrganizationAddress" })

/**
 * @since 0.1.0
 * @category models
 */
export const NumberFormat = Schema.Literal(
  "groupingCommaDecimalDot",
  "groupingDotDecimalComma",
  "groupingSpaceDecimalComma",
  "groupingSpaceDecimalDot"
)

/**
 * @since 0.1.0
 * @category models
 */
export const DayOfWeek = Schema.Literal("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")

/**
 * @since 0.1.0
 * @category models
 */
export const Calendar = Schema.Literal("gregorian", "customFiscal", "weekAlignedFiscal")

/**
 * The date formats the reference server accepts (the real service's list is not public).
 *
 * @since 0.1.0
 * @category models
 */
export const DateFormat = Schema.Literal("DD/MM/YYYY", "MM/DD/YYYY", "YYYY-MM-DD", "DD.MM.YYYY")

/**
 * @since 0.1.0
 * @category models
 */
export const FiscalYearStart = Schema.Struct({
  month: Schema.Int.pipe(Schema.between(1, 12, { message: () => "month must be 1 to 12" })),
  day: Schema.Int.pipe(Schema.between(1, 31, { message: () => "day must be 1 to 31" }))
}).annotations({ identifier: "FiscalYearStart" })

/**
 * @since 0.1.0
 * @category models
 */
export const Settings = Schema.Struct({
  dateFormat: Schema.NullOr(Schema.String),
  numberFormat: Schema.NullOr(Schema.String),
  firstDayOfWeek: Schema.NullOr(Schema.String),
  calendar: Schema.NullOr(Schema.String),
  fiscalYearStart: Schema.NullOr(FiscalYearStart)
}).annotations({ identifier: "OrganizationSettings" })

/**
 * @since 0.1.0
 * @category models
 */
export const OrganizationMetadata = Schema.Struct({
  industry: Schema.NullOr(Schema.Array(Schema.String)),
  businessType: Schema.NullOr(Schema.Array(Schema.String)),
  companySize: Schema.NullOr(Schema.String),
  annualRevenue: Schema.NullOr(Schema.String)
}).annotations({ identifier: "OrganizationMetadata" })

/**
 * @since 0.1.0
 * @category models
 */
export const Organization = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  companyName: Schema.NullOr(Schema.String),
  websiteUrl: Schema.NullOr(Schema.String),
  taxNumber: Schema.NullOr(Schema.String),
  billingName: Schema.NullOr(Schema.String),
  managedBy: Schema.NullOr(UserRef),
  address: Schema.NullOr(Address),
  settings: Schema.NullOr(Settings),
  metadata: Schema.NullOr(OrganizationMetadata)
}).annotations({ identifier: "OrganizationResponse" })

const Text = Schema.String.pipe(Schema.maxLength(255, { message: () => "must be at most 255 characters" }))

/**
 * Any subset. Text fields: `""` clears; address fields left out keep their value; settings
 * and metadata fields left out keep theirs, `null` clears.
 *
 * @since 0.1.0
 * @category models
 */
export const UpdateOrganizationRequest = Schema.Struct({
  name: Schema.optional(Name),
  companyName: Schema.optional(Text),
  websiteUrl: Schema.optional(Text),
  taxNumber: Schema.optional(Text),
  billingName: Schema.optional(Text),
  address: Schema.optional(Schema.Struct({
    street: Schema.optional(Text),
    zip: Schema.optional(Text),
    city: Schema.optional(Text),
    state: Schema.optional(Text),
    country: Schema.optional(Text)
  })),
  settings: Schema.optional(Schema.Struct({
    dateFormat: Schema.optional(Schema.NullOr(DateFormat)),
    numberFormat: Schema.optional(Schema.NullOr(NumberFormat)),
    firstDayOfWeek: Schema.optional(Schema.NullOr(DayOfWeek)),
    calendar: Schema.optional(Schema.NullOr(Calendar)),
    fiscalYearStart: Schema.optional(Schema.NullOr(FiscalYearStart))
  })),
  metadata: Schema.optional(Schema.Struct({
    industry: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
    businessType: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
    companySize: Schema.optional(Schema.NullOr(Schema.String)),
    annualRevenue: Schema.optional(Schema.NullOr(Schema.String))
  }))
}).annotations({ identifier: "UpdateOrganizationRequest" })

/**
 * @since 0.1.0
 * @category models
 */
export const ActivityLogItem = Schema.Struct({
  id: Schema.Int,
  action: Schema.String,
  createdAt: Timestamp,
  isSystem: Schema.Boolean,
  resourceType: Schema.NullOr(Schema.String),
  resourceId: Schema.NullOr(Schema.String),
  user: Schema.NullOr(UserRef),
  details: Schema.NullOr(Schema.Unknown)
}).annotations({ identifier: "ActivityLogItem" })

/**
 * `dateFrom`/`dateTo`: ISO 8601 timestamps, or bare dates (00:00 UTC of that day).
 *
 * @since 0.1.0
 * @category models
 */
export const ActivityLogParams = Schema.Struct({
  ...PageParams.fields,
  resourceType: Schema.optional(Schema.String),
  userId: Schema.optional(Schema.NumberFromString.pipe(Schema.int()).annotations({ jsonSchema: { type: "integer" } })),
  search: Schema.optional(Schema.String),
  dateFrom: Schema.optional(Schema.String),
  dateTo: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export const CountOfLimit = Schema.Struct({ count: Schema.Int, limit: Schema.NullOr(Schema.Int) }).annotations({
  identifier: "UsageCount"
})

/**
 * @since 0.1.0
 * @category models
 */
export const AiCredits = Schema.Struct({
  used: Schema.NullOr(Schema.Number),
  limit: Schema.NullOr(Schema.Number),
  remaining: Schema.NullOr(Schema.Number),
  resetsAt: Schema.NullOr(Schema.String),
  state: Schema.Literal("ok", "low", "exhausted", "unknown")
}).annotations({ identifier: "AiCredits" })

/**
 * @since 0.1.0
 * @category models
 */
export const Usage = Schema.Struct({
  users: CountOfLimit,
  dataSources: CountOfLimit,
  accounts: CountOfLimit,
  aiCredits: Schema.NullOr(AiCredits)
}).annotations({ identifier: "OrganizationUsage" })

/**
 * @since 0.1.0
 * @category models
 */
export const OptionItem = Schema.Struct({ value: Schema.String, label: Schema.String }).annotations({
  identifier: "MetadataOption"
})

/**
 * @since 0.1.0
 * @category models
 */
export const OrganizationMetadataOptions = Schema.Struct({
  industries: Schema.Array(OptionItem),
  businessTypes: Schema.Array(OptionItem),
  companySizes: Schema.Array(OptionItem),
  annualRevenues: Schema.Array(OptionItem)
}).annotations({ identifier: "OrganizationMetadataOptions" })

/**
 * @since 0.1.0
 * @category models
 */
export const Country = Schema.Struct({ code: Schema.String, name: Schema.String }).annotations({ identifier: "Country" })

const OrganizationAnswer = DataResponse(Organization, "OrganizationDetailResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2Organization extends HttpApiGroup.make("v2Organization")
  .add(HttpApiEndpoint.get("get", "/v2/organization").addSuccess(OrganizationAnswer).addError(Forbidden))
  .add(
    HttpApiEndpoint.patch("update", "/v2/organization")
      .setPayload(UpdateOrganizationRequest)
      .addSuccess(OrganizationAnswer)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("activityLog", "/v2/organization/activity-log")
      .setUrlParams(ActivityLogParams)
      .addSuccess(PageResponse(ActivityLogItem, "ActivityLogPage"))
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.get("countries", "/v2/organization/countries")
      .addSuccess(DataResponse(Schema.Struct({ items: Schema.Array(Country) }), "CountriesResponse"))
  )
  .add(
    HttpApiEndpoint.get("metadataOptions", "/v2/organization/metadata-options")
      .addSuccess(DataResponse(OrganizationMetadataOptions, "OrganizationMetadataOptionsResponse"))
  )
  .add(HttpApiEndpoint.get("listTimezones", "/v2/organization/timezones").addSuccess(TimezonesResponse))
  .add(HttpApiEndpoint.get("usage", "/v2/organization/usage").addSuccess(DataResponse(Usage, "OrganizationUsageResponse")))
  .annotate(OpenApi.Title, "v2 organization")
{}
