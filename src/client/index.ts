/**
 * @since 0.1.0
 */
export * from "./Client.js"
export * from "./retry.js"
