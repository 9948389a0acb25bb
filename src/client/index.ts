/**
 * @since 0.1.0
 */
export * from "./Client.js"
export * from "./retry.js"
export * from "./idempotency.js"
export * from "./pagination.js"
export * as Transport from "./transport.js"
