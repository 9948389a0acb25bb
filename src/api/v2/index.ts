/**
 * The v2 API: payloads under `data`, lists under `data.items` + `data.pagination`,
 * 404 for any single resource that is missing or not visible to the key.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import { withCommonErrors } from "../errors.js"
import { ApiKeyAuth } from "../security.js"
import { V2Auth } from "./auth.js"
import { V2Boards } from "./boards.js"
import { V2Connections } from "./connections.js"
import { V2DataSources } from "./dataSources.js"
import { V2DatasetModifications } from "./datasetModifications.js"
import { V2DatasetSettings } from "./datasetSettings.js"
import { V2Datasets } from "./datasets.js"
import { V2Integrations } from "./integrations.js"
import { V2Metrics } from "./metrics.js"
import { V2Organization } from "./organization.js"
import { V2Accounts } from "./accounts.js"
import { V2Billing } from "./billing.js"
import { V2Profile, V2Users } from "./users.js"

export * from "./common.js"
export { V2Auth } from "./auth.js"
export * as DataSources from "./dataSources.js"
export * as Datasets from "./datasets.js"
export * as DatasetSettings from "./datasetSettings.js"
export * as DatasetModifications from "./datasetModifications.js"
export { V2Organization } from "./organization.js"
export * as Metrics from "./metrics.js"
export * as Boards from "./boards.js"
export * as Integrations from "./integrations.js"
export * as Connections from "./connections.js"
export * as Organization from "./organization.js"
export * as Accounts from "./accounts.js"
export * as Users from "./users.js"
export * as Billing from "./billing.js"

/**
 * @since 0.1.0
 * @category api
 */
export class V2Api extends withCommonErrors(HttpApi.make("v2")
  .add(V2Auth)
  .add(V2Organization)
  .add(V2Accounts)
  .add(V2Users)
  .add(V2Profile)
  .add(V2Billing)
  .add(V2DataSources)
  .add(V2Datasets)
  .add(V2DatasetSettings)
  .add(V2DatasetModifications)
  .add(V2Metrics)
  .add(V2Boards)
  .add(V2Integrations)
  .add(V2Connections)
  .middleware(ApiKeyAuth))
{}
