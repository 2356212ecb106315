// What pdf.js says of a run of text, and the geometry that the readings of a page's runs share
// (extract-pdf.ts, placed-accents.ts, formulas.ts).

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
export const upright = (r: TextRun): boolean => r.transform[0]! > 0 && Math.abs(r.transform[1]!) < 1e-3 * r.transform[0]! && Math.abs(r.transform[2]!) < 1e-3 * r.transform[0]!

/**
 * The index of the character of `text` drawn `share` (0 to 1) of the way along its run from the left, the
 * characters taken as equally wide (pdf.js gives a run's width, not its glyphs').
 */
export function characterAt(text: string, share: number): number {
  const chars = Array.from(text)
  return Math.min(chars.length - 1, Math.max(0, Math.floor(share * chars.length)))
}
