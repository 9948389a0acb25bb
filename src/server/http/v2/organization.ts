/**
 * v2 organization handlers: the organization, its activity log, usage and option lists.
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { countries } from "../../features/organization/countries.js"
import { timezones } from "../../core/timezones.js"
import { organizationOptions } from "../../features/organization/catalogues.js"
import { change, changed, serve, servePage } from "../handler.js"
import { respond } from "../envelope.js"
import { activityLog, getOrganization, updateOrganization } from "../../features/organization/organization.js"
import { usage } from "../../core/catalog/organization.js"
import type { Organization } from "../../core/store/Store.js"
import type { ActivityEntry } from "../../features/activity/store.js"

const organizationView = (o: Organization) => ({
  id: o.id,
  name: o.name,
  companyName: o.profile.companyName,
  websiteUrl: o.profile.websiteUrl,
  taxNumber: o.profile.taxNumber,
  billingName: o.profile.billingName,
  // Organizations here are their own: no agency manages them.
  managedBy: null,
  address: o.profile.address,
  settings: o.profile.settings,
  metadata: o.profile.metadata
})

const activityView = (e: ActivityEntry) => ({
  id: e.id,
  action: e.action,
  createdAt: e.createdAt,
  isSystem: e.isSystem,
  resourceType: e.resourceType,
  resourceId: e.resourceId,
  user: e.user,
  details: e.details ?? null
})

/**
 * @since 0.1.0
 * @category layers
 */
export const V2OrganizationLive = HttpApiBuilder.group(TributaryApi, "v2Organization", (handlers) =>
  handlers
    .handle("get", () =>
      serve(getOrganization, (o) => respond("success", { data: organizationView(o) })))
    .handle("update", ({ payload }) =>
      change(
        (p) => updateOrganization(p, payload),
        changed("administration", () => null),
        (o) => respond("success", { data: organizationView(o) })
      ))
    .handle("activityLog", ({ urlParams }) =>
      servePage(urlParams, (p, slice) => activityLog(p, urlParams, slice), activityView))
    .handle("countries", () => respond("success", { data: { items: countries } }))
    .handle("metadataOptions", () => respond("success", { data: organizationOptions }))
    .handle("listTimezones", () => respond("success", { data: { items: timezones() } }))
    .handle("usage", () =>
      serve(usage, ({ counts, limits }) =>
          respond("success", {
            data: {
              users: { count: counts.users, limit: limits.users },
              dataSources: { count: counts.dataSources, limit: limits.dataSources },
              accounts: { count: counts.accounts, limit: limits.accounts },
              // No AI features here, so no credits to count.
              aiCredits: null
            }
          })
        )))
