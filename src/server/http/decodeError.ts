/**
 * Decode failures as wire errors, for the API's error middleware and the ingest route alike.
 *
 * @since 0.1.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import { Option } from "effect"
import type * as SchemaAST from "effect/SchemaAST"
import { TributaryApi } from "../../api/index.js"
import { failWith } from "./envelope.js"
import { formatPath, type Issue, objectIdentifiers, tidyIssues } from "../../internal/issues.js"

const maxMessageLength = 300

/**
 * Echoed text is cut: a message never carries more than a few hundred characters of input.
 *
 * @since 0.1.0
 * @category utils
 */
export const truncate = (text: string): string =>
  text.length > maxMessageLength ? `${text.slice(0, maxMessageLength)}…` : text


/** The names of the object schemas that requests carry, read from the contract once. */
let requestObjects: ReadonlySet<string> | undefined
const requestObjectNames = (): ReadonlySet<string> => {
  if (requestObjects === undefined) {
    const asts: Array<SchemaAST.AST> = []
    HttpApi.reflect(TributaryApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint }) => {
        for (const schema of [endpoint.payloadSchema, endpoint.urlParamsSchema, endpoint.headersSchema, endpoint.pathSchema]) {
          if (Option.isSome(schema)) asts.push(schema.value.ast)
        }
      }
    })
    requestObjects = objectIdentifiers(asts)
  }
  return requestObjects
}

/**
 * The first decode issue names the field (`records[3]`, `timezone`, `datasetId`). A v2
 * `{id}` that cannot be an id names no resource at all: 404, as for any unknown id.
 *
 * @since 0.1.0
 * @category utils
 */
export const badRequestFromDecode = (issues: ReadonlyArray<Issue>, url: string) => {
  const issue = tidyIssues(issues, requestObjectNames())[0]
  if (url.startsWith("/v2/") && issue !== undefined && issue.path.length === 1 && (issue.path[0] === "id" || issue.path[0] === "ingestionId")) {
    return failWith("NotFound", { code: "not_found", message: `no resource has the id given in the path (${issue.message})` })
  }
  const field = issue === undefined ? null : formatPath(issue.path) || null
  const message = issue === undefined ? "the request does not match the API" : truncate(issue.message)
  return failWith("BadRequest", {
    code: "invalid_input",
    field,
    message: field === null ? message : `${field}: ${message}`
  })
}

/**
 * 400 `invalid_json`, with the parser's reason.
 *
 * @since 0.1.0
 * @category utils
 */
export const invalidJson = (reason: string) =>
  failWith("BadRequest", { code: "invalid_json", field: null, message: `the request body is not valid JSON: ${truncate(reason)}` })

/**
 * 413 `payload_too_large` for a body that turned out longer than the limit while read.
 *
 * @since 0.1.0
 * @category defaults
 */
export const bodyTooLarge = failWith("PayloadTooLarge", { code: "payload_too_large", message: "the request body is over the size limit" })
