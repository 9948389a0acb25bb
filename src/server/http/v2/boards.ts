/**
 * v2 board handlers (`/v2/boards` and its alias `/v2/databoards`).
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TributaryApi } from "../../../api/index.js"
import { CurrentPrincipal } from "../../../api/security.js"
import { present } from "../wireErrors.js"
import { respond } from "../envelope.js"
import { boardMetrics, type BoardListParams, listBoards } from "../../features/boards.js"

const list = ({ urlParams }: { readonly urlParams: BoardListParams }) =>
  CurrentPrincipal.pipe(
    Effect.flatMap((p) => listBoards(p, urlParams)),
    Effect.flatMap((data) => respond("success", { data })),
    present
  )

const metrics = ({ path }: { readonly path: { readonly id: number } }) =>
  CurrentPrincipal.pipe(
    Effect.flatMap((p) => boardMetrics(p, path.id)),
    Effect.flatMap((data) => respond("success", { data })),
    present
  )

/** @since 0.1.0 */
export const V2BoardsLive = HttpApiBuilder.group(TributaryApi, "v2Boards", (handlers) =>
  handlers
    .handle("list", list)
    .handle("metrics", metrics)
    .handle("listDataboards", list)
    .handle("databoardMetrics", metrics))
