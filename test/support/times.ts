/**
 * Seeded walks of times for the date writers' tests: the same times every run, spread over twice
 * the years ISO text writes with four digits on either side of them, in no order.
 */

/** `count` milliseconds since 1970, from `seed`, between the years -9999 and 19999 or so. */
export const seededTimes = (seed: number, count: number): Array<number> => {
  const times: Array<number> = []
  for (let i = 0; i < count; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    times.push(Math.floor((seed / 2 ** 31) * 253_402_300_800_000 * 2) - 62_167_219_200_000 * 2)
  }
  return times
}
