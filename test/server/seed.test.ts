/**
 * The seed file: every problem stops start-up naming its path, once, without echoing the
 * file back; the seed takes what the API takes (profile metadata as `PATCH /v2/profile`).
 */
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { loadSeed } from "../../src/server/seed.js"

const dir = mkdtempSync(join(tmpdir(), "tributary-seed-"))
let files = 0

type Org = Record<string, unknown>

const organization = (change: (org: Org) => void = () => {}) => {
  const org: Org = {
    name: "Acme",
    accounts: [{ name: "Acme", accountType: "organization" }],
    users: [
      { name: "Ada", email: "ada@acme.test", role: "admin", apiKeys: ["a"] },
      { name: "Bob", email: "bob@acme.test", role: "editor", apiKeys: ["b"] }
    ]
  }
  change(org)
  return { organizations: [org] }
}

const load = (seed: unknown) => {
  const path = join(dir, `seed-${++files}.json`)
  writeFileSync(path, JSON.stringify(seed))
  return loadSeed(path).pipe(Effect.provide(NodeContext.layer))
}

/** The problems of a refused seed, one per `; `, without the file's name. */
const problems = (seed: unknown) =>
  Effect.map(Effect.flip(load(seed)), (error) => error.reason.split("; "))

const users = (org: Org) => org.users as Array<Record<string, unknown>>

describe("seed files", () => {
  it.effect("user metadata as the profile route takes it: any of the three fields, by its rules", () =>
    Effect.gen(function*() {
      const partial = yield* load(organization((org) => {
        users(org)[0]!.metadata = { department: "sales" }
      }))
      expect(partial.organizations[0].users[0]!.metadata).toEqual({ department: "sales" })
      expect(yield* problems(organization((org) => {
        users(org)[0]!.metadata = { department: "nope" }
      }))).toEqual([
        "organizations[0].users[0].metadata.department: \"nope\" is not one of the departments (see /v2/profile/metadata-options)"
      ])
      expect(yield* problems(organization((org) => {
        users(org)[1]!.metadata = { department: "sales", role: "cto" }
      }))).toEqual(["organizations[0].users[1].metadata.role: \"cto\" is not a role of the department \"sales\""])
    }))

  it.effect("invoice dates are real days or ISO times", () =>
    Effect.gen(function*() {
      const good = yield* load(organization((org) => {
        org.invoices = [
          { amount: 10, status: "paid", date: "2026-01-31" },
          { amount: 10, status: "paid", date: "2026-02-01T09:30:00Z" },
          { amount: 10, status: "paid", date: "2026-03-01T09:30:00.250+02:00" }
        ]
      }))
      expect(good.organizations[0].invoices).toHaveLength(3)
      for (const date of ["yesterday", "2026-02-30", "2026-13-01", "31.01.2026", "2026-01-31T25:00:00Z"]) {
        expect(yield* problems(organization((org) => {
          org.invoices = [{ amount: 10, status: "paid", date }]
        }))).toEqual(["organizations[0].invoices[0].date: must be a date (2026-01-31) or an ISO 8601 time"])
      }
    }))

  it.effect("the seed's own users and accounts must fit its limits; the message names both numbers", () =>
    Effect.gen(function*() {
      expect(yield* problems(organization((org) => {
        org.limits = { users: 1, accounts: 0 }
      }))).toEqual([
        "organizations[0].limits.users: the seed gives 2 users, over the limit of 1",
        "organizations[0].limits.accounts: the seed gives 1 account, over the limit of 0"
      ])
      const fits = yield* load(organization((org) => {
        org.limits = { users: 2, accounts: null }
      }))
      expect(fits.organizations[0].limits).toEqual({ users: 2, accounts: null })
    }))

  it.effect("messages say what is wrong once and do not echo the file back", () =>
    Effect.gen(function*() {
      const invoices = Array.from({ length: 50 }, (_, i) => ({ amount: i, status: "paid", receiptNumber: `R-${i}-${"x".repeat(40)}` }))
      invoices[3] = { ...invoices[3]!, amount: "ten" as unknown as number }
      const found = yield* problems(organization((org) => {
        org.invoices = invoices
        users(org)[1]!.role = "owner"
        org.limits = { users: -1 }
      }))
      expect(found).toEqual([
        "organizations[0].users[1].role: Expected \"admin\" | \"editor\" | \"viewer\", actual \"owner\"",
        "organizations[0].limits.users: must be 0 or more (null: unlimited)",
        "organizations[0].invoices[3].amount: Expected number, actual \"ten\""
      ])
      const notAList = yield* problems(organization((org) => {
        org.invoices = Object.fromEntries(invoices.map((invoice, i) => [`i${i}`, invoice]))
      }))
      expect(notAList).toHaveLength(1)
      expect(notAList[0]).toMatch(/^organizations\[0\]\.invoices: Expected an array, actual \{.{1,60}…$/)
    }))
})
