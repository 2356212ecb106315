// Accents placed by position. Typesetters that have no glyph for an accented letter draw the accent as a
// glyph of its own over (or under) the letter: pdfTeX with TeX's default OT1 fonts draws "é" as "´", a
// move back, then "e"; older Word and QuarkXPress files draw the letter, then the accent moved back over
// it; a capital's accent is raised, a run of its own. pdf.js gives the accent as its spacing character
// (´ for the acute), where the pen put it, so the text reads "g´eom´etriques". Each accent whose glyph
// overlaps a letter's goes onto that letter (NFC: "géométriques"); an accent the page shows alone, with
// its own room, stays as it is.
import { characterAt, fontSize, left, middle, right, type TextRun, upright } from './text-runs.ts'

/** Spacing accents as the combining marks they draw. */
const COMBINING: Record<string, string> = {
  '\u00B4': '\u0301', // ´ acute
  '\u02CA': '\u0301',
  '\u0060': '\u0300', // ` grave
  '\u02CB': '\u0300',
  '\u02C6': '\u0302', // ˆ circumflex
  '\u005E': '\u0302',
  '\u02DC': '\u0303', // ˜ tilde
  '\u007E': '\u0303',
  '\u00A8': '\u0308', // ¨ dieresis
  '\u00B8': '\u0327', // ¸ cedilla
  '\u02C7': '\u030C', // ˇ caron
  '\u02D8': '\u0306', // ˘ breve
  '\u02D9': '\u0307', // ˙ dot
  '\u02DA': '\u030A', // ˚ ring
  '\u00AF': '\u0304', // ¯ macron
  '\u02C9': '\u0304',
  '\u02DD': '\u030B', // ˝ double acute
  '\u02DB': '\u0328', // ˛ ogonek
}
const SPACING = Object.keys(COMBINING).join('').replace(/\^/g, '\\^')
const ACCENT = `${SPACING}\\u0300-\\u036F`
// (a combining mark that ends a run is on the letter before it already)
const ACCENTS_AT_END = new RegExp(`[${SPACING}]+$`, 'u')
const ACCENTS_AT_START = new RegExp(`^[${ACCENT}]+`, 'u')
const ACCENTS_ONLY = new RegExp(`^\\s*[${ACCENT}]+\\s*$`, 'u')
// what an accent goes on: a letter, or a sign a mark is drawn through (= with the slash of ≠)
const BASE = /[\p{L}=<>≤≥∈⊂≡~]/u
// the dotless i and j that TeX puts under an accent
const DOTTED: Record<string, string> = { '\u0131': 'i', '\u0237': 'j' }

const combining = (accents: string) => Array.from(accents, (a) => COMBINING[a] ?? a).join('')
const accented = (base: string, accents: string) => ((DOTTED[base] ?? base) + combining(accents)).normalize('NFC')

/** The accent overlaps the other run by at least this share of the font size: drawn over it, not beside it. */
const OVERLAP = 0.15

/** Whether two runs lie on one line (an accent raised over a capital included). */
const sameLine = (a: TextRun, b: TextRun) => Math.abs(a.transform[5]! - b.transform[5]!) < fontSize(b) * 0.6

/** The runs with each accent drawn over or under a letter put on that letter. */
export function placedAccents(runs: readonly TextRun[]): TextRun[] {
  if (!runs.some((r) => ACCENTS_AT_END.test(r.str) || ACCENTS_AT_START.test(r.str))) return [...runs]
  const out = runs.map((r) => ({ ...r }))
  const gone = new Set<TextRun>()
  for (let i = 0; i < out.length; i++) {
    const run = out[i]!
    if (!upright(run)) continue
    // an accent drawn as a run of its own (a capital's, raised): onto the letter under its middle
    if (ACCENTS_ONLY.test(run.str)) {
      const x = middle(run)
      // the letter under its middle, in the run next to it first (a space drawn there is not what it marks);
      // a mark of no width may be drawn from the end of its letter leftwards (a Unicode font's combining
      // marks), or from the start of its letter rightwards (TeX's \not): the letter that ends a little
      // before it counts too
      const letterUnder = (after: number) => (b: TextRun | undefined) =>
        b && b !== run && !gone.has(b) && upright(b) && b.width > 0 && sameLine(run, b) && left(b) <= x && x <= right(b) + after &&
        BASE.test(Array.from(b.str)[characterAt(b.str, (x - left(b)) / b.width)]!)
      const near = [out[i + 1], out[i - 1], ...out]
      const base = near.find(letterUnder(0)) ?? (run.width === 0 ? near.find(letterUnder(fontSize(run) * 0.3)) : undefined)
      if (!base) continue
      const at = characterAt(base.str, (x - left(base)) / base.width)
      const chars = Array.from(base.str)
      chars[at] = accented(chars[at]!, run.str.trim())
      base.str = chars.join('')
      run.str = ''
      if (!run.hasEOL) gone.add(run)
      continue
    }
    const next = out[i + 1]
    if (!next || !upright(next) || !sameLine(run, next) || left(next) > right(run) - fontSize(run) * OVERLAP) continue
    // the accent ends this run and the pen moved back over it for the letter that starts the next (pdfTeX)
    const end = ACCENTS_AT_END.exec(run.str)?.[0]
    const first = Array.from(next.str)[0]
    if (end && first && BASE.test(first)) {
      next.str = accented(first, end) + next.str.slice(first.length)
      run.str = run.str.slice(0, -end.length)
      run.width = Math.max(0, left(next) - left(run))
      if (run.str === '' && !run.hasEOL) gone.add(run)
      continue
    }
    // the accent starts the next run, drawn back over the letter that ends this one
    const start = ACCENTS_AT_START.exec(next.str)?.[0]
    const last = Array.from(run.str).at(-1)
    if (start && last && BASE.test(last)) {
      run.str = run.str.slice(0, -last.length) + accented(last, start)
      next.str = next.str.slice(start.length)
      const shift = Math.max(0, right(run) - left(next))
      next.transform = [...next.transform.slice(0, 4), right(run), next.transform[5]!]
      next.width = Math.max(0, next.width - shift)
      if (next.str === '' && !next.hasEOL) gone.add(next)
    }
  }
  return out.filter((r) => !gone.has(r))
}
