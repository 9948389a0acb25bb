/**
 * The pipeline: source -> validate -> batch -> send -> track -> commit.
 *
 * @since 0.1.0
 */
export * from "./batch.js"
export * as Checkpoint from "./Checkpoint.js"
export { commit } from "./commit.js"
export * as DeadLetter from "./DeadLetter.js"
export * from "./deliver.js"
export * from "./events.js"
export * from "./run.js"
export * from "./Source.js"
export * as Typed from "./Typed.js"
export * from "./validate.js"
