/**
 * A schema contract's text read into its modes, with no import at run time: the command line's
 * front door checks `--schema-contract` with it before loading Effect or the pipeline
 * (`SchemaContract.parse` is this, as an `Either`).
 *
 * @since 0.3.0
 * @internal
 */

/**
 * The modes a contract's text names (`SchemaContract` has the same shape; written here so that
 * this module imports nothing, not even types).
 *
 * @since 0.3.0
 * @category models
 */
export interface ContractModes {
  readonly columns: "evolve" | "freeze" | "discard_value"
  readonly dataType: "freeze" | "discard_value"
}

const usage = "expected evolve, freeze, discard_value, or a list such as columns=discard_value,data_type=freeze " +
  "(columns: evolve|freeze|discard_value, data_type: freeze|discard_value)"

/**
 * The contract a text names, or why it names none.
 *
 * @since 0.3.0
 * @category utils
 */
export const readContract = (text: string): ContractModes | { readonly problem: string } => {
  const trimmed = text.trim()
  if (trimmed === "evolve") return { columns: "evolve", dataType: "freeze" }
  if (trimmed === "freeze") return { columns: "freeze", dataType: "freeze" }
  if (trimmed === "discard_value") return { columns: "discard_value", dataType: "discard_value" }
  let contract: ContractModes = { columns: "evolve", dataType: "freeze" }
  const seen = new Set<string>()
  for (const part of trimmed.split(",")) {
    const match = /^\s*([a-z_]+)\s*=\s*([a-z_]+)\s*$/.exec(part)
    if (match === null) return { problem: `'${part.trim()}' is not a contract: ${usage}` }
    const [, what, mode] = match as unknown as [string, string, string]
    if (seen.has(what)) return { problem: `'${what}' is given twice: ${usage}` }
    seen.add(what)
    if (what === "columns" && (mode === "evolve" || mode === "freeze" || mode === "discard_value")) {
      contract = { ...contract, columns: mode }
    } else if ((what === "data_type" || what === "dataType") && (mode === "freeze" || mode === "discard_value")) {
      contract = { ...contract, dataType: mode }
    } else {
      return { problem: `'${part.trim()}' is not a contract: ${usage}` }
    }
  }
  return contract
}
