/**
 * Schemas shared by v1 and v2.
 *
 * @since 0.1.0
 */
import { Arbitrary, Schema } from "effect"

/**
 * The request id every answer carries.
 *
 * @since 0.1.0
 * @category models
 */
export const RequestId = Schema.String.annotations({ description: "Unique identifier of the request" })

/**
 * ISO 8601 UTC timestamp with six fractional digits and a trailing `Z`
 * (e.g. `2026-11-22T10:00:00.000000Z`).
 *
 * @since 0.1.0
 * @category models
 */
export const Timestamp = Schema.String.annotations({
  description: "ISO 8601 UTC timestamp with six fractional digits and a trailing Z",
  examples: ["2026-11-22T10:00:00.000000Z"]
})

/**
 * An integer id in a path (`/v1/data-sources/42`).
 *
 * @since 0.1.0
 * @category models
 */
export const IntegerId = Schema.compose(
  Schema.String.pipe(
    // One spelling per id: `01`, `0x1`, `1e3`, ` 1` and `+1` all parsed as numbers before.
    Schema.pattern(/^[1-9][0-9]{0,15}$/, { message: () => "must be a positive integer in decimal digits" })
  ),
  Schema.NumberFromString.pipe(
    Schema.int({ message: () => "must be an integer" }),
    Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER, { message: () => "is too large for an id" })
  )
).annotations({ jsonSchema: { type: "integer", minimum: 1 } })

/**
 * Text a person names things with (titles, names, column ids): no control characters, which
 * no name needs and which break logs, terminals and CSV exports (a NUL was stored as given).
 *
 * @since 0.1.0
 * @category models
 */
export const PlainText = Schema.String.pipe(
  Schema.filter((s) => !/[\u0000-\u001f\u007f]/.test(s), {
    message: () => "must not contain control characters (U+0000 to U+001F, U+007F)"
  })
)

/**
 * A non-blank name.
 *
 * @since 0.1.0
 * @category models
 */
export const Name = PlainText.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must not be blank" }),
  Schema.maxLength(255, { message: () => "must be at most 255 characters" })
)

/**
 * A UUID in a path (dataset and ingestion ids).
 *
 * @since 0.1.0
 * @category models
 */
export const UuidId = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, {
    message: () => "must be a UUID"
  })
).annotations({ jsonSchema: { type: "string", format: "uuid" } })

/**
 * A UUID naming something (a path id, a body reference): any case is accepted, decoded to lower case (the form ids are handed out
 * in), so that `/v1/datasets/0B1C...` names the same dataset as `/v1/datasets/0b1c...`.
 *
 * @since 0.1.0
 * @category models
 */
export const UuidAnyCase = Schema.transform(UuidId, UuidId, {
  strict: true,
  decode: (id) => id.toLowerCase(),
  encode: (id) => id
}).annotations({ jsonSchema: { type: "string", format: "uuid" } })

/**
 * A time zone entry: IANA id and its current UTC offset (`UTC+01:00`).
 *
 * @since 0.1.0
 * @category models
 */
export const TimezoneEntry = Schema.Struct({
  timezone: Schema.String,
  offset: Schema.String
}).annotations({ identifier: "TimezoneEntry" })

// The shape documented (OpenAPI) and generated (Arbitrary) for a record.
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * One record to ingest: a JSON object keyed by column id, in v1 and v2 alike.
 *
 * Any JSON value passes here: each record is checked on its own when the ingestion is
 * processed, and one that is not an object is rejected alone (`not_an_object`), the others
 * stored. Not decoded either: a `Schema.Record` decode copied every record key by key (40 of
 * 50 µs of a 100-record payload's decoding) and doubled the request's live heap.
 *
 * @since 0.1.0
 * @category models
 */
export const IngestRecord: Schema.Schema<unknown> = Schema.Unknown.annotations({
  identifier: "Record",
  description: "A JSON object keyed by column id",
  jsonSchema: {
    type: "object",
    required: [],
    properties: {},
    additionalProperties: { $id: "/schemas/unknown", title: "unknown" }
  },
  arbitrary: () => Arbitrary.makeLazy(JsonObject)
})

/**
 * The largest number of records one ingestion may carry.
 *
 * @since 0.1.0
 * @category defaults
 */
export const MaxRecordsPerIngestion = 100

/**
 * The optional `Idempotency-Key` header (lower-case: that is how it is matched), v2's and, as an extension, v1's.
 *
 * @since 0.1.0
 * @category models
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})
