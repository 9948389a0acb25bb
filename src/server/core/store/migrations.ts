/**
 * The Postgres store's tables, as `@effect/sql` migrations (run at start-up, see `sql.ts`).
 *
 * Rows are `jsonb` (one per stored row, with its JSON size beside it, so that a dataset's size
 * is kept without reading its rows); a row's `seq` is its place in storage order, and `key`
 * its primary-key string (null without a primary key): a unique index on it makes the
 * primary-key overwrite one upsert. An ingestion's records wait as `json` (kept as sent, key
 * order included: columns are inferred in that order) until a worker completes it.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

const initial = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    // Case- and accent-insensitive order for names and text columns, as the memory store's
    // Intl.Collator with sensitivity "base"; ties are broken by storage order.
    sql`CREATE COLLATION IF NOT EXISTS tributary_base (provider = icu, locale = 'und-u-ks-level1', deterministic = false)`,
    sql`CREATE TABLE organizations (
      id serial PRIMARY KEY,
      name text NOT NULL UNIQUE
    )`,
    sql`CREATE TABLE accounts (
      id serial PRIMARY KEY,
      organization_id int NOT NULL REFERENCES organizations ON DELETE CASCADE,
      name text NOT NULL,
      account_type text NOT NULL,
      UNIQUE (organization_id, name)
    )`,
    sql`CREATE TABLE users (
      id serial PRIMARY KEY,
      organization_id int NOT NULL REFERENCES organizations ON DELETE CASCADE,
      name text NOT NULL,
      email text NOT NULL,
      role text NOT NULL,
      UNIQUE (organization_id, email)
    )`,
    sql`CREATE TABLE api_keys (
      key text PRIMARY KEY,
      user_id int NOT NULL REFERENCES users ON DELETE CASCADE
    )`,
    sql`CREATE TABLE data_sources (
      id serial PRIMARY KEY,
      organization_id int NOT NULL,
      account_id int NOT NULL,
      name text NOT NULL,
      timezone text NOT NULL,
      created_at text NOT NULL,
      key text NOT NULL,
      created_by jsonb NOT NULL,
      sync_interval int,
      permissions jsonb NOT NULL
    )`,
    sql`CREATE INDEX data_sources_organization ON data_sources (organization_id, id)`,
    sql`CREATE TABLE datasets (
      id uuid PRIMARY KEY,
      organization_id int NOT NULL,
      data_source_id int NOT NULL REFERENCES data_sources ON DELETE CASCADE,
      name text NOT NULL,
      created_at text NOT NULL,
      primary_key jsonb NOT NULL,
      schema jsonb NOT NULL,
      created_by jsonb NOT NULL,
      timezone text,
      sync_interval int,
      permissions jsonb NOT NULL,
      verification jsonb NOT NULL,
      metadata jsonb NOT NULL,
      column_metadata jsonb NOT NULL,
      row_count bigint NOT NULL DEFAULT 0,
      size bigint NOT NULL DEFAULT 0,
      next_seq bigint NOT NULL DEFAULT 0,
      last_success_at text,
      ordinal bigserial
    )`,
    sql`CREATE INDEX datasets_organization ON datasets (organization_id, ordinal)`,
    sql`CREATE INDEX datasets_data_source ON datasets (data_source_id, ordinal)`,
    sql`CREATE TABLE dataset_rows (
      dataset_id uuid NOT NULL REFERENCES datasets ON DELETE CASCADE,
      seq bigint NOT NULL,
      key text,
      data jsonb NOT NULL,
      size int NOT NULL,
      PRIMARY KEY (dataset_id, seq)
    )`,
    sql`CREATE UNIQUE INDEX dataset_rows_key ON dataset_rows (dataset_id, key) WHERE key IS NOT NULL`,
    sql`CREATE TABLE ingestions (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      dataset_id uuid NOT NULL REFERENCES datasets ON DELETE CASCADE,
      status text NOT NULL,
      initiated_at text NOT NULL,
      initiated_by jsonb NOT NULL,
      duration int,
      counts jsonb NOT NULL,
      dataset_stats jsonb,
      problems json NOT NULL DEFAULT '[]',
      failure text,
      records json,
      lease_owner text,
      lease_until bigint
    )`,
    sql`CREATE INDEX ingestions_dataset ON ingestions (dataset_id, seq DESC)`,
    sql`CREATE INDEX ingestions_pending ON ingestions (seq) WHERE status IN ('queued', 'processing')`,
    sql`CREATE TABLE idempotency_keys (
      scope text PRIMARY KEY,
      fingerprint text NOT NULL,
      answer json,
      stored_at bigint NOT NULL
    )`
  ], { discard: true, concurrency: 1 }))

/**
 * v2 numbers: data sources and datasets draw their ids from one sequence, as on the service
 * (a dataset keeps its UUID as its key and v1 id, and gains a `number`). Datasets stored before
 * get numbers past every data source id, in creation order.
 */
const numericIds = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`CREATE SEQUENCE entity_ids AS int`,
    sql`SELECT setval('entity_ids', coalesce((SELECT max(id) FROM data_sources), 0) + 1, false)`,
    sql`ALTER TABLE data_sources ALTER COLUMN id SET DEFAULT nextval('entity_ids')`,
    sql`DROP SEQUENCE data_sources_id_seq`,
    sql`ALTER TABLE datasets ADD COLUMN number int UNIQUE`,
    sql`UPDATE datasets d SET number = n.number
      FROM (SELECT id, nextval('entity_ids') AS number FROM (SELECT id FROM datasets ORDER BY ordinal) o) n
      WHERE d.id = n.id`,
    sql`ALTER TABLE datasets ALTER COLUMN number SET DEFAULT nextval('entity_ids'), ALTER COLUMN number SET NOT NULL`
  ], { discard: true, concurrency: 1 }))

/**
 * Metrics and connections. Custom metrics: the definition as JSON columns, keyed by `<dataSourceId>|custom_query_<n>`
 * (`n` from `ordinal`, which also keeps creation order); deleted with their dataset.
 */
const metrics = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`CREATE TABLE metrics (
      id text PRIMARY KEY,
      ordinal bigserial NOT NULL,
      organization_id int NOT NULL,
      data_source_id int NOT NULL,
      dataset_id uuid NOT NULL REFERENCES datasets ON DELETE CASCADE,
      name text NOT NULL,
      measure jsonb NOT NULL,
      date jsonb NOT NULL,
      aggregation_function text NOT NULL,
      dimensions jsonb NOT NULL,
      filters jsonb,
      verification jsonb NOT NULL,
      created_at text NOT NULL,
      created_by jsonb NOT NULL
    )`,
    sql`CREATE INDEX metrics_organization ON metrics (organization_id, ordinal)`,
    sql`CREATE INDEX metrics_dataset ON metrics (dataset_id)`,
    // Connections, and the data sources that sync through one.
    sql`CREATE TABLE connections (
      id serial PRIMARY KEY,
      organization_id int NOT NULL,
      name text NOT NULL,
      integration_key text,
      managed_by jsonb,
      shared_with_accounts boolean NOT NULL,
      permissions jsonb NOT NULL,
      created_at text,
      status text NOT NULL,
      UNIQUE (organization_id, name)
    )`,
    sql`ALTER TABLE data_sources ADD COLUMN connection_id int`,
    sql`CREATE INDEX data_sources_connection ON data_sources (connection_id) WHERE connection_id IS NOT NULL`
  ], { discard: true, concurrency: 1 }))

/**
 * Dataset modifications (calculated columns, filters, display names, data types, order,
 * visibility): one `jsonb` document per dataset, read with the dataset, since every reader of
 * its rows needs it.
 */
const modifications = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`ALTER TABLE datasets ADD COLUMN modifications jsonb NOT NULL
    DEFAULT '{"filters":{},"formulas":{},"displayNames":{},"dataTypes":{},"order":[],"visibility":{}}'`)

/**
 * The organization's own data (profile, the seed's plan, limits and invoices), more of each
 * account and user, and the activity log. Ids are far from the first so that migrations
 * written at the same time elsewhere take the numbers in between.
 */
const organization = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`ALTER TABLE organizations
      ADD COLUMN profile jsonb NOT NULL DEFAULT '{"companyName":null,"websiteUrl":null,"taxNumber":null,"billingName":null,"address":null,"settings":null,"metadata":null}',
      ADD COLUMN plan jsonb NOT NULL DEFAULT '{"name":"Development","status":"active","billingPeriod":null,"billingEmail":null}',
      ADD COLUMN limits jsonb NOT NULL DEFAULT '{"users":1000,"dataSources":10000,"accounts":1000}',
      ADD COLUMN invoices jsonb NOT NULL DEFAULT '[]'`,
    sql`ALTER TABLE accounts
      ADD COLUMN company_name text,
      ADD COLUMN website_url text,
      ADD COLUMN managed_by jsonb,
      ADD COLUMN created_at text`,
    sql`ALTER TABLE users
      ADD COLUMN timezone text,
      ADD COLUMN created_at text,
      ADD COLUMN metadata jsonb,
      ADD COLUMN email_verified boolean NOT NULL DEFAULT true`,
    sql`CREATE TABLE activity_log (
      id bigserial PRIMARY KEY,
      organization_id int NOT NULL,
      action text NOT NULL,
      created_at text NOT NULL,
      is_system boolean NOT NULL,
      resource_type text,
      resource_id text,
      user_ref jsonb,
      details jsonb
    )`,
    sql`CREATE INDEX activity_log_organization ON activity_log (organization_id, id DESC)`
  ], { discard: true, concurrency: 1 }))

/**
 * Ingestions in acceptance order per dataset, and the `processing` delay: `process_after` is
 * the time (milliseconds) before which no worker takes an ingestion (null: none). A claim
 * finds the oldest pending ingestion of each dataset with one probe of the first index per
 * dataset, and a worker the next one to come due through the second; the index of pending
 * ingestions in `seq` order alone served the claims before, which took any pending ingestion
 * of a dataset, and has no reader left.
 */
const ingestionOrder = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`ALTER TABLE ingestions ADD COLUMN process_after bigint`,
    sql`CREATE INDEX ingestions_pending_dataset ON ingestions (dataset_id, seq) WHERE status IN ('queued', 'processing')`,
    sql`CREATE INDEX ingestions_due ON ingestions (process_after) WHERE status = 'queued' AND process_after IS NOT NULL`,
    sql`DROP INDEX ingestions_pending`
  ], { discard: true, concurrency: 1 }))

/**
 * The seed finds its organizations by a key of their own, the name the seed gave them, kept
 * when a user renames one (found by name, a renamed organization was made again under its old
 * name at the next start, and the seed's boards went to the copy). The organizations made
 * before are the seed's, named as the seed named them unless renamed since: their name is the
 * best key there is. Names need not be unique any more: a rename may take a name the seed will
 * give to another organization.
 */
const organizationSeedKey = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.all([
    sql`ALTER TABLE organizations ADD COLUMN seed_key text`,
    sql`UPDATE organizations SET seed_key = name`,
    sql`CREATE UNIQUE INDEX organizations_seed_key ON organizations (seed_key)`,
    sql`ALTER TABLE organizations DROP CONSTRAINT organizations_name_key`
  ], { discard: true, concurrency: 1 }))

/**
 * The `traceparent` of the request that carried an ingestion (null: not traced), so that the
 * span that processes it can link to that request's trace.
 */
const ingestionTraceparent = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.asVoid(sql`ALTER TABLE ingestions ADD COLUMN traceparent text`))

/**
 * Idempotency keys by when they were stored: expired keys are swept now and then (one request
 * a minute deletes up to `idempotencySweep.rows` of them, `sql/ingestions.ts`), not only when their scope comes again.
 */
const idempotencyStoredAt = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.asVoid(sql`CREATE INDEX idempotency_keys_stored_at ON idempotency_keys (stored_at)`))

/**
 * Every migration, by id and name.
 *
 * @since 0.1.0
 * @category defaults
 */
export const migrations = {
  "1_initial": initial,
  "2_numeric_ids": numericIds,
  "3_metrics_connections": metrics,
  "4_modifications": modifications,
  "15_organization": organization,
  "16_ingestion_order": ingestionOrder,
  "17_organization_seed_key": organizationSeedKey,
  "18_ingestion_traceparent": ingestionTraceparent,
  "19_idempotency_stored_at": idempotencyStoredAt
}
