// What pdf.js says of a run of text, and the geometry that the readings of a page's runs share
// (extract.ts, placed-accents.ts, formulas.ts).

/** A run of text: its string, direction, position (transform e, f), width and height. */
export interface TextRun {
  str: string
  dir: string
  transform: number[]
  width: number
  height: number
  hasEOL: boolean
}

/** A run's font size: its height, or its transform's scale when pdf.js gives no height (a space). */
export function fontSize(r: TextRun): number {
  return Math.max(Math.abs(r.height) || Math.hypot(r.transform[2]!, r.transform[3]!), 1)
}

export const left = (r: TextRun): number => r.transform[4]!
export const right = (r: TextRun): number => r.transform[4]! + r.width
export const middle = (r: TextRun): number => r.transform[4]! + r.width / 2
export const baseline = (r: TextRun): number => r.transform[5]!
export const blank = (r: TextRun): boolean => r.str.trim() === ''

/** Whether a run's matrix is upright (not turned, not mirrored): only such runs are read by position. */
export const upright = (r: TextRun): boolean =>
  r.transform[0]! > 0 && Math.abs(r.transform[1]!) < 1e-3 * r.transform[0]! && Math.abs(r.transform[2]!) < 1e-3 * r.transform[0]!

/**
 * The index of the character of `text` drawn `share` (0 to 1) of the way along its run from the left, the
 * characters taken as equally wide (pdf.js gives a run's width, not its glyphs').
 */
export function characterAt(text: string, share: number): number {
  const chars = Array.from(text)
  return Math.min(chars.length - 1, Math.max(0, Math.floor(share * chars.length)))
}

/** Arabic, with the presentation forms, which pdf.js gives for some fonts (canonicalize folds them later). */
export const ARABIC = /[\u0600-\u06FF\u0750-\u077F\uFB50-\uFDFF\uFE70-\uFEFF]/

// what is never written after a space: a full stop, a comma, a closing bracket
export const CLOSING = /^[.,)\]]/

/**
 * The narrow blank runs (less than a word space) that a maths typesetter draws before a full stop, a
 * comma or a closing bracket after a formula, left out: the sign then touches what it closes.
 */
export function withoutRoomBeforeClosing(items: readonly TextRun[]): readonly TextRun[] {
  const room = (r: TextRun, i: number) => {
    if (r.str === '' || r.str.trim() !== '' || r.hasEOL || r.width >= fontSize(r) * 0.2 || i === 0 || i + 1 >= items.length) return false
    const [before, after] = [items[i - 1]!, items[i + 1]!]
    // left to right: the sign after the room; a right-to-left line drawn from its left end: the sign alone before it
    return (CLOSING.test(after.str) && !ARABIC.test(before.str)) ||
      (/^[.,]$/.test(before.str) && after.str.trim() !== '' && !ARABIC.test(after.str) && after.transform[4]! > before.transform[4]!)
  }
  return items.some(room) ? items.filter((r, i) => !room(r, i)) : items
}

// Two runs nearer than this share a word (a fraction of the font size; a word space is about 0.25).
export const TOUCH = 0.1

/** Whether two runs of a line touch (a word's pieces), whatever their order. */
export function adjacent(a: TextRun, b: TextRun): boolean {
  return Math.max(a.transform[4]!, b.transform[4]!) - Math.min(right(a), right(b)) < fontSize(a) * TOUCH
}

/**
 * Whether two runs, in the content stream's order, are one word: not blank, on one line, touching; or a
 * full stop, comma or closing bracket drawn right after a run of left-to-right text, nearer than a word
 * space (a maths typesetter leaves a little room after an italic letter or a fraction: "vT.").
 */
export function touches(a: TextRun, b: TextRun): boolean {
  if (a.str.trim() === '' || b.str.trim() === '' || /\s$/.test(a.str) || /^\s/.test(b.str)) return false
  if (Math.abs(a.transform[5]! - b.transform[5]!) > fontSize(a) * 0.3) return false
  if (CLOSING.test(b.str) && !ARABIC.test(a.str) && b.transform[4]! >= right(a) - fontSize(a) * TOUCH && b.transform[4]! - right(a) < fontSize(a) * 0.2) {
    return true
  }
  return adjacent(a, b)
}
