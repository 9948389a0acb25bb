/**
 * The rules of organization and profile updates (research §4.1, §4.2), as pure functions:
 * the stored value and the patch in, the new value or the first field in error out.
 *
 * @since 0.1.0
 */
import { Either } from "effect"
import { isCountryCode } from "./countries.js"
import { departments, isOption, organizationOptions } from "./catalogues.js"
import type {
  OrganizationAddress,
  OrganizationMetadata,
  OrganizationProfile,
  OrganizationSettings,
  UserMetadata
} from "../../core/store/Store.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface FieldError {
  readonly field: string
  readonly message: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface OrganizationPatch {
  readonly companyName?: string | undefined
  readonly websiteUrl?: string | undefined
  readonly taxNumber?: string | undefined
  readonly billingName?: string | undefined
  readonly address?: { readonly [K in keyof OrganizationAddress]?: string | undefined } | undefined
  readonly settings?: { readonly [K in keyof OrganizationSettings]?: OrganizationSettings[K] | undefined } | undefined
  readonly metadata?: { readonly [K in keyof OrganizationMetadata]?: OrganizationMetadata[K] | undefined } | undefined
}

/** `""` clears; left out keeps. */
const text = (given: string | undefined, stored: string | null): string | null =>
  given === undefined ? stored : given.trim() === "" ? null : given.trim()

/** Given (null included) replaces; left out keeps. */
const pick = <A>(given: A | undefined, stored: A): A => given === undefined ? stored : given

const allNull = (o: object) => Object.values(o).every((v) => v === null)

const daysIn = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

const fail = (field: string, message: string) => Either.left<FieldError>({ field, message })

const mergeAddress = (
  stored: OrganizationAddress | null,
  patch: NonNullable<OrganizationPatch["address"]>
): Either.Either<OrganizationAddress | null, FieldError> => {
  const base = stored ?? { street: null, zip: null, city: null, state: null, country: null }
  const country = text(patch.country, base.country)?.toUpperCase() ?? null
  if (country !== null && !isCountryCode(country)) {
    return fail("address.country", `"${patch.country}" is not an ISO 3166-1 alpha-2 country code (see /v2/organization/countries)`)
  }
  const address: OrganizationAddress = {
    street: text(patch.street, base.street),
    zip: text(patch.zip, base.zip),
    city: text(patch.city, base.city),
    state: text(patch.state, base.state),
    country
  }
  return Either.right(allNull(address) ? null : address)
}

const mergeSettings = (
  stored: OrganizationSettings | null,
  patch: NonNullable<OrganizationPatch["settings"]>
): Either.Either<OrganizationSettings | null, FieldError> => {
  const base = stored ?? { dateFormat: null, numberFormat: null, firstDayOfWeek: null, calendar: null, fiscalYearStart: null }
  const calendar = pick(patch.calendar, base.calendar)
  const fiscal = calendar === "customFiscal" || calendar === "weekAlignedFiscal"
  // Switching to a non-fiscal calendar drops the fiscal year start.
  const fiscalYearStart = fiscal ? pick(patch.fiscalYearStart, base.fiscalYearStart) : null
  if (!fiscal && patch.fiscalYearStart != null) {
    return fail("settings.fiscalYearStart", "a fiscal year start needs a fiscal calendar (customFiscal or weekAlignedFiscal)")
  }
  if (fiscalYearStart !== null && fiscalYearStart.day > daysIn[fiscalYearStart.month - 1]!) {
    return fail("settings.fiscalYearStart", `month ${fiscalYearStart.month} has no day ${fiscalYearStart.day}`)
  }
  const settings: OrganizationSettings = {
    dateFormat: pick(patch.dateFormat, base.dateFormat),
    numberFormat: pick(patch.numberFormat, base.numberFormat),
    firstDayOfWeek: pick(patch.firstDayOfWeek, base.firstDayOfWeek),
    calendar,
    fiscalYearStart
  }
  return Either.right(allNull(settings) ? null : settings)
}

const mergeMetadata = (
  stored: OrganizationMetadata | null,
  patch: NonNullable<OrganizationPatch["metadata"]>
): Either.Either<OrganizationMetadata | null, FieldError> => {
  const base = stored ?? { industry: null, businessType: null, companySize: null, annualRevenue: null }
  const lists = [
    ["industry", patch.industry, organizationOptions.industries],
    ["businessType", patch.businessType, organizationOptions.businessTypes]
  ] as const
  for (const [field, values, options] of lists) {
    const unknown = values?.find((v) => !isOption(options, v))
    if (unknown !== undefined) return fail(`metadata.${field}`, `"${unknown}" is not one of the metadata options`)
  }
  const singles = [
    ["companySize", patch.companySize, organizationOptions.companySizes],
    ["annualRevenue", patch.annualRevenue, organizationOptions.annualRevenues]
  ] as const
  for (const [field, value, options] of singles) {
    if (value != null && !isOption(options, value)) return fail(`metadata.${field}`, `"${value}" is not one of the metadata options`)
  }
  const emptyAsNull = (values: ReadonlyArray<string> | null) => values === null || values.length === 0 ? null : [...new Set(values)]
  const metadata: OrganizationMetadata = {
    industry: emptyAsNull(pick(patch.industry, base.industry)),
    businessType: emptyAsNull(pick(patch.businessType, base.businessType)),
    companySize: pick(patch.companySize, base.companySize),
    annualRevenue: pick(patch.annualRevenue, base.annualRevenue)
  }
  return Either.right(allNull(metadata) ? null : metadata)
}

/**
 * The organization's profile after `patch`.
 *
 * @since 0.1.0
 * @category utils
 */
export const mergeOrganization = (
  stored: OrganizationProfile,
  patch: OrganizationPatch
): Either.Either<OrganizationProfile, FieldError> =>
  Either.gen(function*() {
    const address = patch.address === undefined ? stored.address : yield* mergeAddress(stored.address, patch.address)
    const settings = patch.settings === undefined ? stored.settings : yield* mergeSettings(stored.settings, patch.settings)
    const metadata = patch.metadata === undefined ? stored.metadata : yield* mergeMetadata(stored.metadata, patch.metadata)
    return {
      companyName: text(patch.companyName, stored.companyName),
      websiteUrl: text(patch.websiteUrl, stored.websiteUrl),
      taxNumber: text(patch.taxNumber, stored.taxNumber),
      billingName: text(patch.billingName, stored.billingName),
      address,
      settings,
      metadata
    }
  })

/**
 * @since 0.1.0
 * @category models
 */
export interface UserMetadataPatch {
  readonly department?: string | null | undefined
  readonly title?: string | null | undefined
  readonly role?: string | null | undefined
}

/** `""` and null clear; left out keeps. */
const clearable = (given: string | null | undefined, stored: string | null): string | null =>
  given === undefined ? stored : given === null || given.trim() === "" ? null : given.trim()

/**
 * A profile's metadata after `patch`: the department and the job role come from the
 * metadata options, the role from its department's roles; a role cannot stay without its
 * department.
 *
 * @since 0.1.0
 * @category utils
 */
export const mergeUserMetadata = (
  stored: UserMetadata | null,
  patch: UserMetadataPatch
): Either.Either<UserMetadata | null, FieldError> => {
  const base = stored ?? { department: null, title: null, role: null }
  const department = clearable(patch.department, base.department)
  const role = clearable(patch.role, base.role)
  const found = departments.find((d) => d.value === department)
  if (department !== null && found === undefined) {
    return fail("metadata.department", `"${department}" is not one of the departments (see /v2/profile/metadata-options)`)
  }
  if (role !== null && found === undefined) {
    return fail("metadata.role", "a role needs a department: clear the role together with the department")
  }
  if (role !== null && found !== undefined && !isOption(found.roles, role)) {
    return fail("metadata.role", `"${role}" is not a role of the department "${found.value}"`)
  }
  const metadata = { department, title: clearable(patch.title, base.title), role }
  return Either.right(allNull(metadata) ? null : metadata)
}
