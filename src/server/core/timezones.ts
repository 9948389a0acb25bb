/**
 * The IANA time zones the service knows, with their UTC offsets (v1 `/v1/accounts/timezones`,
 * v2 `/v2/organization/timezones`), and the check for time zone fields.
 *
 * @since 0.1.0
 */

/**
 * One entry of the time zone list: an IANA identifier and its offset at a given instant,
 * formatted `UTC+01:00`.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimezoneEntry {
  readonly timezone: string
  readonly offset: string
}

// ICU lists some zones under their old CLDR names (Node 20 has Asia/Calcutta, not Asia/Kolkata);
// newer runtimes list the current names instead. Both names of each pair are listed so that the
// list, and what isTimezone accepts, is the same on every runtime.
const renamedZones: ReadonlyArray<readonly [old: string, current: string]> = [
  ["Africa/Asmera", "Africa/Asmara"],
  ["America/Buenos_Aires", "America/Argentina/Buenos_Aires"],
  ["America/Catamarca", "America/Argentina/Catamarca"],
  ["America/Coral_Harbour", "America/Atikokan"],
  ["America/Cordoba", "America/Argentina/Cordoba"],
  ["America/Godthab", "America/Nuuk"],
  ["America/Indianapolis", "America/Indiana/Indianapolis"],
  ["America/Jujuy", "America/Argentina/Jujuy"],
  ["America/Louisville", "America/Kentucky/Louisville"],
  ["America/Mendoza", "America/Argentina/Mendoza"],
  ["Asia/Calcutta", "Asia/Kolkata"],
  ["Asia/Katmandu", "Asia/Kathmandu"],
  ["Asia/Rangoon", "Asia/Yangon"],
  ["Asia/Saigon", "Asia/Ho_Chi_Minh"],
  ["Atlantic/Faeroe", "Atlantic/Faroe"],
  ["Europe/Kiev", "Europe/Kyiv"],
  ["Pacific/Enderbury", "Pacific/Kanton"],
  ["Pacific/Ponape", "Pacific/Pohnpei"],
  ["Pacific/Truk", "Pacific/Chuuk"]
]

const offsetFormatter = (timezone: string): Intl.DateTimeFormat | undefined => {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: timezone, timeZoneName: "longOffset" })
  } catch {
    // An older ICU may not know a current name yet; such a name is left out.
    return undefined
  }
}

let formatters: ReadonlyMap<string, Intl.DateTimeFormat> | undefined

// Built once: the set of zones does not change while the process runs.
const zoneFormatters = (): ReadonlyMap<string, Intl.DateTimeFormat> => {
  if (formatters === undefined) {
    const names = new Set(Intl.supportedValuesOf("timeZone"))
    names.add("UTC")
    for (const pair of renamedZones) for (const name of pair) names.add(name)
    const built = new Map<string, Intl.DateTimeFormat>()
    for (const name of names) {
      const formatter = offsetFormatter(name)
      if (formatter !== undefined) built.set(name, formatter)
    }
    formatters = built
  }
  return formatters
}

// "GMT", "GMT+05:30", or "GMT-00:19:32" for local mean time at historical instants.
const longOffsetPattern = /^GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/

const offsetAt = (formatter: Intl.DateTimeFormat, at: Date): { readonly seconds: number; readonly offset: string } => {
  const name = formatter.formatToParts(at).find((part) => part.type === "timeZoneName")?.value ?? ""
  const match = longOffsetPattern.exec(name)
  if (match === null) throw new Error(`Unexpected time zone offset text: ${JSON.stringify(name)}`)
  const [, sign = "+", hours = "00", minutes = "00", seconds = "00"] = match
  const total = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * (sign === "-" ? -1 : 1)
  // Seconds only occur before standard time; the wire format has minutes, so they are dropped.
  return { seconds: total, offset: `UTC${sign}${hours}:${minutes}` }
}

/**
 * Every IANA time zone (as the runtime's `Intl` lists it, plus `UTC` and the current names of
 * zones ICU lists under an old name) with its UTC offset at `at` (default: now), sorted by offset,
 * then by name. Computed on each call; callers that serve it often may cache it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const timezones = (at: Date = new Date()): ReadonlyArray<TimezoneEntry> =>
  Array.from(zoneFormatters(), ([timezone, formatter]) => ({ timezone, ...offsetAt(formatter, at) }))
    .sort((a, b) => a.seconds - b.seconds || (a.timezone < b.timezone ? -1 : a.timezone > b.timezone ? 1 : 0))
    .map(({ offset, timezone }) => ({ timezone, offset }))

/**
 * Whether `name` is one of the identifiers {@link timezones} lists. Case-sensitive: `UTC` and
 * `Europe/Ljubljana` are accepted, `utc` and `europe/ljubljana` are not.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTimezone = (name: string): boolean => zoneFormatters().has(name)
