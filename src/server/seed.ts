/**
 * The seed: organizations, accounts, users and API keys the reference server starts with.
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import * as FileSystem from "@effect/platform/FileSystem"
import { Data, Effect, Either, ParseResult, Schema } from "effect"
import { Role } from "../api/security.js"
import { DateRange } from "../api/v2/boards.js"
import { AppliedFilters } from "../api/v2/metrics.js"
import { formatPath, parseIssues } from "../internal/issues.js"
import { isTimezone } from "./core/timezones.js"
import { mergeUserMetadata } from "./features/organization/profiles.js"
import { defaultLimits, defaultPlan } from "./core/store/Store.js"
import { CatalogStore } from "./core/store/ports/catalog.js"
import type { StoreError } from "./core/errors.js"

const NonEmpty = Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" }))

const Nullable = Schema.NullOr(Schema.String)

const SeedUser = Schema.Struct({
  name: NonEmpty,
  email: NonEmpty,
  role: Role,
  apiKeys: Schema.Array(NonEmpty),
  timezone: Schema.optional(NonEmpty.pipe(Schema.filter((zone) => isTimezone(zone) || "must be an IANA time zone"))),
  /** As `PATCH /v2/profile` takes it: any of the three, by the same rules (see `/v2/profile/metadata-options`). */
  metadata: Schema.optional(
    Schema.Struct({ department: Schema.optional(Nullable), title: Schema.optional(Nullable), role: Schema.optional(Nullable) }).pipe(
      Schema.filter((metadata) =>
        Either.match(mergeUserMetadata(null, metadata), {
          onLeft: (error) => ({ path: [error.field.replace(/^metadata\./, "")], message: error.message }),
          onRight: () => true
        })
      )
    )
  )
})

const Limit = Schema.NullOr(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0, { message: () => "must be 0 or more (null: unlimited)" })))

const SeedPlan = Schema.Struct({
  name: NonEmpty,
  status: NonEmpty,
  billingPeriod: Schema.optionalWith(Schema.NullOr(Schema.Literal("monthly", "quarterly", "yearly")), { default: () => null }),
  billingEmail: Schema.optionalWith(Nullable, { default: () => null })
})

/** `2026-01-31` or `2026-01-31T09:00:00Z` / `...+02:00`, a real day and time. */
const isIsoDate = (text: string): boolean =>
  /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(text) &&
  !Number.isNaN(Date.parse(text)) && new Date(Date.parse(text.slice(0, 10))).toISOString().startsWith(text.slice(0, 10))

const SeedInvoice = Schema.Struct({
  invoiceId: Schema.optionalWith(Nullable, { default: () => null }),
  /** A day (`2026-01-31`) or a time (`2026-01-31T09:00:00Z`). */
  date: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.filter(isIsoDate, { message: () => "must be a date (2026-01-31) or an ISO 8601 time" }))), {
    default: () => null
  }),
  amount: Schema.Number,
  status: NonEmpty,
  receiptNumber: Schema.optionalWith(Nullable, { default: () => null }),
  downloadUrl: Schema.optionalWith(Nullable, { default: () => null })
})

const SeedAccount = Schema.Struct({
  name: NonEmpty,
  accountType: Schema.Literal("organization", "agency", "client")
})

/**
 * A metric a board block shows: a metric of the organization named by its name (or its id),
 * found when the board is read, so that boards can show metrics defined after start-up.
 */
const SeedBlockMetric = Schema.Struct({
  metric: NonEmpty,
  /** Dimension ids shown; all of the metric's without. */
  dimensions: Schema.optional(Schema.Array(NonEmpty)),
  dateRange: Schema.optional(DateRange),
  appliedFilters: Schema.optional(AppliedFilters)
})

const SeedBlock = Schema.Struct({
  name: NonEmpty,
  visualizationType: Schema.optional(Schema.NullOr(Schema.String)),
  metrics: Schema.Array(SeedBlockMetric)
})

/**
 * A board of an organization: boards have no create route, they come from the seed.
 *
 * @since 0.1.0
 * @category models
 */
export const SeedBoard = Schema.Struct({
  name: NonEmpty,
  tags: Schema.optional(Schema.Array(Schema.String)),
  blocks: Schema.Array(SeedBlock)
})

/**
 * @since 0.1.0
 * @category models
 */
export type SeedBoard = typeof SeedBoard.Type

/**
 * A connection of an organization: connections have no create route, they come from the seed.
 * `managedBy` is the email of one of the organization's users.
 *
 * @since 0.1.0
 * @category models
 */
export const SeedConnection = Schema.Struct({
  name: NonEmpty,
  integrationKey: Schema.optional(NonEmpty),
  managedBy: Schema.optional(NonEmpty),
  sharedWithAccounts: Schema.optional(Schema.Boolean),
  accessLevel: Schema.optional(Schema.Literal("everyone", "private")),
  status: Schema.optional(Schema.Literal("active", "error"))
})

/** The seed's own users and accounts count against its limits: a limit they are over is an error. */
const withinLimits = (org: {
  readonly users: ReadonlyArray<unknown>
  readonly accounts: ReadonlyArray<unknown>
  readonly limits?: { readonly users?: number | null | undefined; readonly accounts?: number | null | undefined } | undefined
}) => {
  const over = (["users", "accounts"] as const).flatMap((kind) => {
    const limit = org.limits?.[kind]
    const count = org[kind].length
    return limit === undefined || limit === null || count <= limit
      ? []
      : [{ path: ["limits", kind], message: `the seed gives ${count} ${count === 1 ? kind.slice(0, -1) : kind}, over the limit of ${limit}` }]
  })
  return over.length === 0 || over
}

const SeedOrganization = Schema.Struct({
  name: NonEmpty,
  accounts: Schema.NonEmptyArray(SeedAccount),
  users: Schema.Array(SeedUser),
  boards: Schema.optional(Schema.Array(SeedBoard)),
  connections: Schema.optional(Schema.Array(SeedConnection)),
  /** Billing (`GET /v2/billing`); a development plan without one. */
  plan: Schema.optional(SeedPlan),
  /** How many users, data sources and accounts the organization may hold; generous defaults for those left out. */
  limits: Schema.optional(Schema.Struct({
    users: Schema.optional(Limit),
    dataSources: Schema.optional(Limit),
    accounts: Schema.optional(Limit)
  })),
  /** `GET /v2/billing/invoices`, in this order. */
  invoices: Schema.optional(Schema.Array(SeedInvoice))
}).pipe(Schema.filter(withinLimits))

/**
 * The seed file's shape. Unknown fields are an error, so a typo does not pass silently.
 *
 * @since 0.1.0
 * @category models
 */
export const Seed = Schema.Struct({ organizations: Schema.NonEmptyArray(SeedOrganization) }).pipe(
  Schema.filter((seed) => {
    const keys = seed.organizations.flatMap((o) => o.users.flatMap((u) => u.apiKeys))
    const duplicate = keys.find((key, i) => keys.indexOf(key) !== i)
    return duplicate === undefined || `API key "${duplicate}" is given to more than one user`
  })
)

/**
 * @since 0.1.0
 * @category models
 */
export type Seed = typeof Seed.Type

/**
 * The seed could not be read or does not have the expected shape.
 *
 * @since 0.1.0
 * @category errors
 */
export class SeedError extends Data.TaggedError("SeedError")<{ readonly path: string; readonly reason: string }> {
  override get message() {
    return `Invalid seed file ${this.path}: ${this.reason}`
  }
}

const decodeSeed = Schema.decodeUnknown(Seed, { onExcessProperty: "error", errors: "all" })

/**
 * Reads and checks a seed file; every problem names its path in the file
 * (`organizations[0].users[1].role`).
 *
 * @since 0.1.0
 * @category utils
 */
export const loadSeed = (path: string): Effect.Effect<Seed, SeedError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.mapError((error) => new SeedError({ path, reason: error.message }))
    )
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) => new SeedError({ path, reason: `not valid JSON (${(error as Error).message})` })
    })
    return yield* decodeSeed(json).pipe(
      Effect.mapError((error) => new SeedError({ path, reason: describeIssues(error) }))
    )
  })

const describeIssues = (error: ParseResult.ParseError): string =>
  parseIssues(error).map((issue) => `${formatPath(issue.path) || "(top level)"}: ${issue.message}`).join("; ")

/**
 * A fresh development key: `trb_` and 32 hex characters.
 *
 * @since 0.1.0
 * @category utils
 */
export const generateApiKey = (): string => `trb_${randomBytes(16).toString("hex")}`

/**
 * The seed used without `--seed`: one organization, one account and one admin whose
 * key is `apiKey`.
 *
 * @since 0.1.0
 * @category utils
 */
export const defaultSeed = (apiKey: string): Seed => ({
  organizations: [
    {
      name: "Development",
      accounts: [{ name: "Development", accountType: "organization" }],
      users: [{ name: "Developer", email: "developer@tributary.local", role: "admin", apiKeys: [apiKey] }]
    }
  ]
})

/**
 * Puts the seed's organizations, accounts, users and keys into the store. Idempotent: a
 * store that already holds them is left as it is, with the same ids.
 *
 * @since 0.1.0
 * @category utils
 */
export const applySeed = (seed: Seed): Effect.Effect<void, StoreError, CatalogStore> =>
  Effect.flatMap(CatalogStore, (store) =>
    Effect.forEach(seed.organizations, (org) =>
      Effect.gen(function*() {
        const organization = yield* store.ensureOrganization(org.name)
        // The seed owns the plan, limits and invoices: set on every start.
        yield* store.setOrganizationPlan(organization.id, {
          plan: org.plan ?? defaultPlan,
          limits: {
            users: org.limits?.users === undefined ? defaultLimits.users : org.limits.users,
            dataSources: org.limits?.dataSources === undefined ? defaultLimits.dataSources : org.limits.dataSources,
            accounts: org.limits?.accounts === undefined ? defaultLimits.accounts : org.limits.accounts
          },
          invoices: org.invoices ?? []
        })
        for (const account of org.accounts) yield* store.ensureAccount(organization.id, account)
        for (const { apiKeys, metadata, ...user } of org.users) {
          const { id } = yield* store.ensureUser(organization.id, {
            ...user,
            metadata: metadata === undefined ? undefined : Either.getOrElse(mergeUserMetadata(null, metadata), () => null)
          })
          for (const key of apiKeys) yield* store.ensureApiKey(key, id)
        }
      }), { discard: true }))
