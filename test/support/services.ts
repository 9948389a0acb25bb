/**
 * Where the real services for tests live. `test/setup/services.ts` (vitest globalSetup) starts
 * them and exports these variables to the workers; the defaults match `scripts/services.sh`.
 */

const defaultKafkaBrokers = "127.0.0.1:19092"
const defaultDatabaseUrl = "postgres://postgres@127.0.0.1:5432/tributary_test"

/** Kafka bootstrap brokers from `KAFKA_BROKERS` (comma separated). */
export const kafkaBrokers = (): string[] =>
  (process.env["KAFKA_BROKERS"] ?? defaultKafkaBrokers)
    .split(",")
    .map((broker) => broker.trim())
    .filter((broker) => broker.length > 0)

/**
 * The same broker's SASL_PLAINTEXT listener from `KAFKA_SASL_BROKERS` (PLAIN, user
 * `tributary`, password `tributary-secret`; see `scripts/kafka.sh`).
 */
export const kafkaSaslBrokers = (): string[] =>
  (process.env["KAFKA_SASL_BROKERS"] ?? "127.0.0.1:19094").split(",").map((broker) => broker.trim()).filter(Boolean)

/** The same broker's TLS listener from `KAFKA_TLS_BROKERS`, and the certificate to trust for it. */
export const kafkaTls = () => ({
  brokers: (process.env["KAFKA_TLS_BROKERS"] ?? "127.0.0.1:19095").split(",").map((broker) => broker.trim()).filter(Boolean),
  ca: process.env["KAFKA_TLS_CA"] ?? new URL("../../.services/kafka/tls/ca.pem", import.meta.url).pathname
})

/** Postgres connection string from `DATABASE_URL`. */
export const databaseUrl = (): string => process.env["DATABASE_URL"] ?? defaultDatabaseUrl
