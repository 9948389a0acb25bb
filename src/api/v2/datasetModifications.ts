/**
 * v2 dataset modifications: calculated columns (formulas), filters, display names, data types,
 * order and visibility of a dataset's columns (`/v2/datasets/{id}/modifications`), a preview of
 * a definition on the stored rows, and the functions and rules a definition may use.
 *
 * @since 0.1.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Forbidden, Unprocessable } from "../errors.js"
import { DataResponse, DatasetIdPath, IdempotencyHeaders, SortOrder } from "./common.js"
import { SchemaColumn } from "./datasets.js"

/**
 * One filter condition: an operator of `GET /v2/datasets/modifications/rules` for the
 * column's type, and its value (a list for `in`, `not_in` and `between`; none for `is_null`
 * and `is_not_null`).
 *
 * @since 0.1.0
 * @category models
 */
export const FilterCondition = Schema.Struct({
  type: Schema.String,
  value: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "ModificationFilterCondition" })

/**
 * @since 0.1.0
 * @category models
 */
export const ColumnFilter = Schema.Struct({
  logicalOperator: Schema.Literal("AND", "OR"),
  conditions: Schema.Array(FilterCondition)
}).annotations({ identifier: "ModificationColumnFilter" })

/**
 * @since 0.1.0
 * @category models
 */
export const OutputFormatChoice = Schema.Struct({
  type: Schema.String,
  scale: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "ModificationOutputFormat" })

/**
 * A data type change of one column: what its values become (`outputLogicalType`), how text or
 * numbers are read (`inputFormat`) and how values are shown (`outputFormat`).
 *
 * @since 0.1.0
 * @category models
 */
export const DataTypeChange = Schema.Struct({
  outputLogicalType: Schema.String,
  inputFormat: Schema.optional(Schema.NullOr(Schema.String)),
  outputFormat: Schema.optional(Schema.NullOr(OutputFormatChoice))
}).annotations({ identifier: "ModificationDataType" })

const byColumn = <S extends Schema.Schema.Any>(value: S) => Schema.Record({ key: Schema.String, value })

/**
 * A full definition, as `PUT` and the preview take it: a key left out is cleared.
 *
 * @since 0.1.0
 * @category models
 */
export const ModificationsRequest = Schema.Struct({
  filters: Schema.optional(byColumn(ColumnFilter)),
  formulas: Schema.optional(byColumn(Schema.String)),
  displayNames: Schema.optional(byColumn(Schema.String)),
  dataTypes: Schema.optional(byColumn(DataTypeChange)),
  order: Schema.optional(Schema.Array(Schema.String)),
  visibility: Schema.optional(byColumn(Schema.Boolean))
}).annotations({ identifier: "DatasetModificationRequest" })

/**
 * A dataset's modifications: maps keyed by column id, empty when unset; `order` and
 * `visibility` cover every column, stored and calculated.
 *
 * @since 0.1.0
 * @category models
 */
export const DatasetModifications = Schema.Struct({
  filters: byColumn(ColumnFilter),
  formulas: byColumn(Schema.String),
  displayNames: byColumn(Schema.String),
  dataTypes: byColumn(DataTypeChange),
  order: Schema.Array(Schema.String),
  visibility: byColumn(Schema.Boolean)
}).annotations({ identifier: "DatasetModificationResponse" })

/**
 * @since 0.1.0
 * @category models
 */
export const PreviewParams = Schema.Struct({
  sortBy: Schema.optional(Schema.String),
  sortOrder: Schema.optional(SortOrder)
})

/**
 * Up to 200 rows as the definition would show them, the number of rows it keeps, and the
 * schema view (hidden columns with `visible: false`).
 *
 * @since 0.1.0
 * @category models
 */
export const ModificationPreview = Schema.Struct({
  items: Schema.Array(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  pagination: Schema.Struct({ totalItems: Schema.Int }),
  schema: Schema.Array(SchemaColumn)
}).annotations({ identifier: "ModificationPreview" })

/**
 * @since 0.1.0
 * @category models
 */
export const FormulaFunction = Schema.Struct({
  name: Schema.String,
  signature: Schema.String,
  description: Schema.String,
  example: Schema.NullOr(Schema.String),
  parameters: Schema.Array(Schema.Struct({
    name: Schema.String,
    description: Schema.String,
    isOptional: Schema.Boolean
  }))
}).annotations({ identifier: "ModificationFunction" })

const InputFormat = Schema.Struct({ id: Schema.String, displayName: Schema.String })

/**
 * @since 0.1.0
 * @category models
 */
export const ModificationRules = Schema.Struct({
  filterRules: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) }),
  dataTypeRules: Schema.Struct({
    conversionsByPhysicalType: Schema.Record({
      key: Schema.String,
      value: Schema.Array(Schema.Struct({
        outputLogicalType: Schema.String,
        inputFormats: Schema.Array(Schema.NullOr(InputFormat))
      }))
    }),
    outputFormats: Schema.Struct({
      byLogicalType: Schema.Record({
        key: Schema.String,
        value: Schema.Array(Schema.Struct({ id: Schema.String, displayName: Schema.String, format: Schema.String }))
      }),
      scalableLogicalTypes: Schema.Array(Schema.String),
      scaleOptions: Schema.Array(Schema.Struct({ id: Schema.String, displayName: Schema.String, example: Schema.String }))
    })
  })
}).annotations({ identifier: "ModificationRules" })

const Answer = DataResponse(DatasetModifications, "DatasetModificationsResponse")

/**
 * @since 0.1.0
 * @category api
 */
export class V2DatasetModifications extends HttpApiGroup.make("v2DatasetModifications")
  .add(
    HttpApiEndpoint.get("functions", "/v2/datasets/modifications/functions").addSuccess(
      DataResponse(Schema.Struct({ items: Schema.Array(FormulaFunction) }), "ModificationFunctionsResponse")
    )
  )
  .add(
    HttpApiEndpoint.get("rules", "/v2/datasets/modifications/rules").addSuccess(
      DataResponse(ModificationRules, "ModificationRulesResponse")
    )
  )
  .add(HttpApiEndpoint.get("get", "/v2/datasets/:id/modifications").setPath(DatasetIdPath).addSuccess(Answer))
  .add(
    HttpApiEndpoint.put("set", "/v2/datasets/:id/modifications")
      .setPath(DatasetIdPath)
      .setPayload(ModificationsRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(Answer)
      .addError(Forbidden)
      .addError(Unprocessable)
  )
  .add(
    HttpApiEndpoint.del("clear", "/v2/datasets/:id/modifications")
      .setPath(DatasetIdPath)
      .addSuccess(Answer)
      .addError(Forbidden)
  )
  .add(
    HttpApiEndpoint.post("preview", "/v2/datasets/:id/modifications/preview")
      .setPath(DatasetIdPath)
      .setUrlParams(PreviewParams)
      .setPayload(ModificationsRequest)
      .addSuccess(DataResponse(ModificationPreview, "ModificationPreviewResponse"))
  )
  .annotate(OpenApi.Title, "v2 dataset modifications")
{}
