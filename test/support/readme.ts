/**
 * The code blocks of a Markdown file, with where they are and whether they are meant to run.
 *
 * A block is run (shell) or type-checked (TypeScript) unless the line before its fence (blank
 * lines aside) is `<!-- not run: REASON -->`; blocks of other languages (`text`, `json`, none)
 * are shown output or data and never run. docs/decisions.md, "README code blocks".
 */
export interface Block {
  readonly lang: string
  readonly code: string
  /** The fence's line, from 1. */
  readonly line: number
  /** Why it is not run, when marked. */
  readonly notRun: string | undefined
}

export const extractBlocks = (markdown: string): Array<Block> => {
  const lines = markdown.split("\n")
  const blocks: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+|~~~+)\s*([\w-]*)/.exec(lines[i]!)
    if (open === null) continue
    const fence = open[2]!
    let end = i + 1
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence)) end++
    let before = i - 1
    while (before >= 0 && lines[before]!.trim() === "") before--
    const marker = before >= 0 ? /^<!--\s*not run:\s*(.*?)\s*-->$/.exec(lines[before]!.trim()) : null
    blocks.push({ lang: open[3]!.toLowerCase(), code: lines.slice(i + 1, end).join("\n"), line: i + 1, notRun: marker?.[1] })
    i = end
  }
  return blocks
}

export const isShell = (block: Block) => ["sh", "bash", "shell", "console"].includes(block.lang)
export const isTypeScript = (block: Block) => ["ts", "typescript"].includes(block.lang)
