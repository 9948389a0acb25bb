/**
 * The command line's failures, and the one place where foreign errors (Node's system errors
 * under the platform's wrappers) become one line that names the thing and the cause.
 *
 * @since 0.3.0
 */
import { Data } from "effect"

/**
 * A problem with how the command was called, found after parsing (two options that exclude
 * each other, a fault spec that does not parse): exit code 2.
 *
 * @since 0.3.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** A Node system error (`code`, `syscall`, ...), found on an error or along its causes. */
interface SystemError {
  readonly code: string
  readonly syscall?: string
  readonly address?: string
  readonly port?: number
  readonly hostname?: string
  readonly path?: string
  readonly message?: string
}

const systemErrorOf = (error: unknown, depth = 0): SystemError | undefined => {
  if (typeof error !== "object" || error === null || depth > 6) return undefined
  const code = (error as { code?: unknown }).code
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return error as SystemError
  const inner = (error as { cause?: unknown }).cause
  const errors = (error as { errors?: unknown }).errors
  return systemErrorOf(inner, depth + 1) ??
    (Array.isArray(errors) ? errors.map((e) => systemErrorOf(e, depth + 1)).find((e) => e !== undefined) : undefined)
}

/**
 * What a Node system error means for the user, naming the port, host or file.
 *
 * @since 0.3.0
 * @category utils
 */
export const describeSystemError = (error: SystemError): string => {
  const where = error.port === undefined ? error.address ?? "" : `${error.address ?? ""}:${error.port}`
  switch (error.code) {
    case "EADDRINUSE":
      return `port ${error.port ?? "?"}${error.address === undefined ? "" : ` on ${error.address}`} is in use (EADDRINUSE); pass --port (0 picks a free one) or stop what holds it`
    case "EACCES":
      return error.port === undefined
        ? `permission denied${error.path === undefined ? "" : ` for ${error.path}`} (EACCES)`
        : `not allowed to listen on port ${error.port} (EACCES); ports below 1024 need privileges: pass --port 8080`
    case "EADDRNOTAVAIL":
      return `cannot listen on ${where}: no such address on this machine (EADDRNOTAVAIL); pass --host 127.0.0.1`
    case "ECONNREFUSED":
      return `nothing answers at ${where} (ECONNREFUSED): is the service running, and is the address right?`
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot resolve the host ${error.hostname ?? where} (${error.code}): check the address`
    case "ENOENT":
      return `no such file: ${error.path ?? "(unknown path)"} (ENOENT)`
    case "EISDIR":
      return `${error.path ?? "the path"} is a directory, not a file (EISDIR)`
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `no answer from ${where} in time (${error.code})`
    default:
      return `${error.message ?? error.code} (${error.code})`
  }
}

/**
 * One line for any failure: its own message when it has one that says something, else what
 * the system error under it means.
 *
 * @since 0.3.0
 * @category utils
 */
export const failureMessage = (failure: unknown): string => {
  const system = systemErrorOf(failure)
  const own = failure instanceof Error || (typeof failure === "object" && failure !== null && "message" in failure)
    ? String((failure as { message: unknown }).message ?? "")
    : String(failure)
  const firstLine = own.split("\n")[0]!.trim()
  if (system !== undefined && (firstLine === "" || /^(Transport error|An error has occurred|ServeError)/.test(firstLine) || system === failure)) {
    return describeSystemError(system)
  }
  if (firstLine !== "") return firstLine
  const tag = typeof failure === "object" && failure !== null ? (failure as { _tag?: unknown })._tag : undefined
  return typeof tag === "string" ? `${tag} (no message)` : "failed (no message)"
}
