/**
 * Small helpers for messages people read.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * The word with its indefinite article: `an editor`, `an integer`, `a viewer`, `a datetime`.
 *
 * @since 0.1.0
 * @category utils
 */
export const withArticle = (word: string): string => `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`
