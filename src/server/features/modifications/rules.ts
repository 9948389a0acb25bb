/**
 * What modifications may do per column type: the filter operators, the type conversions with
 * their input formats, and the output formats. `GET /v2/datasets/modifications/rules` lists
 * these tables, and validation reads the same ones.
 *
 * @since 0.1.0
 */
import type { ColumnType } from "../../../records.js"

/**
 * Filter operators by column type (the type after any data type change).
 *
 * @since 0.1.0
 * @category utils
 */
export const filterRules: Readonly<Record<ColumnType, ReadonlyArray<string>>> = {
  string: [
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "in",
    "not_in",
    "is_null",
    "is_not_null"
  ],
  number: [
    "equals",
    "not_equals",
    "greater_than",
    "greater_than_or_equal",
    "less_than",
    "less_than_or_equal",
    "between",
    "in",
    "not_in",
    "is_null",
    "is_not_null"
  ],
  datetime: [
    "equals",
    "not_equals",
    "before",
    "after",
    "on_or_before",
    "on_or_after",
    "between",
    "is_null",
    "is_not_null"
  ]
}

/**
 * Logical types a data type change may produce.
 *
 * @since 0.1.0
 * @category utils
 */
export type LogicalType = "string" | "number" | "currency" | "percentage" | "duration" | "datetime"

/**
 * The column type a logical type is stored as: currency, percentage and duration are numbers.
 *
 * @since 0.1.0
 * @category utils
 */
export const physicalTypeOf = (logical: LogicalType): ColumnType =>
  logical === "string" ? "string" : logical === "datetime" ? "datetime" : "number"

/**
 * @since 0.1.0
 * @category utils
 */
export interface InputFormat {
  readonly id: string
  readonly displayName: string
}

/**
 * @since 0.1.0
 * @category utils
 */
export interface Conversion {
  readonly outputLogicalType: LogicalType
  /** `null` in the list: no input format needed (the default reading). */
  readonly inputFormats: ReadonlyArray<InputFormat | null>
}

/**
 * Text date formats a `string` column may be read with; `ISO_8601` is the default.
 *
 * @since 0.1.0
 * @category utils
 */
export const textDateFormats: ReadonlyArray<InputFormat> = [
  { id: "ISO_8601", displayName: "ISO 8601 (2026-01-31 or 2026-01-31T10:00:00Z)" },
  { id: "YYYY-MM-DD", displayName: "2026-01-31" },
  { id: "YYYY/MM/DD", displayName: "2026/01/31" },
  { id: "DD/MM/YYYY", displayName: "31/01/2026" },
  { id: "MM/DD/YYYY", displayName: "01/31/2026" },
  { id: "DD.MM.YYYY", displayName: "31.01.2026" }
]

/**
 * Unix time units a `number` column may be read with as a datetime; seconds are the default.
 *
 * @since 0.1.0
 * @category utils
 */
export const unixFormats: ReadonlyArray<InputFormat> = [
  { id: "UNIX_SECONDS", displayName: "Unix time in seconds" },
  { id: "UNIX_MILLISECONDS", displayName: "Unix time in milliseconds" }
]

const plain = (outputLogicalType: LogicalType): Conversion => ({ outputLogicalType, inputFormats: [null] })

/**
 * The data type changes allowed from each column type.
 *
 * @since 0.1.0
 * @category utils
 */
export const conversionsByPhysicalType: Readonly<Record<ColumnType, ReadonlyArray<Conversion>>> = {
  string: [
    plain("string"),
    plain("number"),
    plain("currency"),
    plain("percentage"),
    { outputLogicalType: "datetime", inputFormats: [null, ...textDateFormats] }
  ],
  number: [
    plain("number"),
    plain("currency"),
    plain("percentage"),
    plain("duration"),
    plain("string"),
    { outputLogicalType: "datetime", inputFormats: [null, ...unixFormats] }
  ],
  datetime: [plain("datetime"), plain("string")]
}

/**
 * @since 0.1.0
 * @category utils
 */
export interface OutputFormat {
  readonly id: string
  readonly displayName: string
  readonly format: string
}

/**
 * How values of each logical type may be shown. Display only: rows keep their values.
 *
 * @since 0.1.0
 * @category utils
 */
export const outputFormatsByLogicalType: Readonly<Record<LogicalType, ReadonlyArray<OutputFormat>>> = {
  string: [{ id: "TEXT", displayName: "Text", format: "@" }],
  number: [
    { id: "AUTO_NUMBER", displayName: "Number", format: "#,##0.##" },
    { id: "INTEGER", displayName: "Whole number", format: "#,##0" }
  ],
  currency: [
    { id: "AUTO_DOLLAR", displayName: "US dollar", format: "$#,##0.00" },
    { id: "AUTO_EURO", displayName: "Euro", format: "€#,##0.00" },
    { id: "AUTO_POUND", displayName: "Pound sterling", format: "£#,##0.00" }
  ],
  percentage: [{ id: "PERCENT", displayName: "Percent", format: "0.##%" }],
  duration: [
    { id: "SECONDS", displayName: "Seconds as h:mm:ss", format: "[h]:mm:ss" },
    { id: "MINUTES", displayName: "Minutes as h:mm", format: "[h]:mm" }
  ],
  datetime: [
    { id: "ISO_8601", displayName: "ISO 8601", format: "YYYY-MM-DDTHH:mm:ssZ" },
    { id: "DATE", displayName: "Date", format: "YYYY-MM-DD" },
    { id: "DATE_TIME", displayName: "Date and time", format: "YYYY-MM-DD HH:mm" }
  ]
}

/**
 * Logical types whose output may be scaled.
 *
 * @since 0.1.0
 * @category utils
 */
export const scalableLogicalTypes: ReadonlyArray<LogicalType> = ["number", "currency"]

/**
 * @since 0.1.0
 * @category utils
 */
export const scaleOptions: ReadonlyArray<{ readonly id: string; readonly displayName: string; readonly example: string }> = [
  { id: "none", displayName: "None", example: "1234567" },
  { id: "thousands", displayName: "Thousands", example: "1,234.6K" },
  { id: "millions", displayName: "Millions", example: "1.2M" },
  { id: "billions", displayName: "Billions", example: "0.001B" }
]

/**
 * The rules answer, as `GET /v2/datasets/modifications/rules` serves it.
 *
 * @since 0.1.0
 * @category utils
 */
export const modificationRules = {
  filterRules,
  dataTypeRules: {
    conversionsByPhysicalType,
    outputFormats: {
      byLogicalType: outputFormatsByLogicalType,
      scalableLogicalTypes,
      scaleOptions
    }
  }
}
