/**
 * v2 board handlers (`/v2/boards` and its alias `/v2/databoards`).
 *
 * @since 0.1.0
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { TributaryApi } from "../../../api/index.js"
import { serve } from "../handler.js"
import { respond } from "../envelope.js"
import { boardMetrics, type BoardListParams, listBoards } from "../../features/boards.js"

const list = ({ urlParams }: { readonly urlParams: BoardListParams }) =>
  serve((p) => listBoards(p, urlParams), (data) => respond("success", { data }))

const metrics = ({ path }: { readonly path: { readonly id: number } }) =>
  serve((p) => boardMetrics(p, path.id), (data) => respond("success", { data }))

/**
 * @since 0.1.0
 * @category layers
 */
export const V2BoardsLive = HttpApiBuilder.group(TributaryApi, "v2Boards", (handlers) =>
  handlers
    .handle("list", list)
    .handle("metrics", metrics)
    .handle("listDataboards", list)
    .handle("databoardMetrics", metrics))
