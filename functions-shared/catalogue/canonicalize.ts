// Canonical text of a discovered document (spec §1, scraper pipeline step 1), so that fingerprints and
// quality checks see the same text whatever the PDF's encoding quirks.

export interface CanonicalizeOptions {
  /** per-source boilerplate, as regular-expression sources (matched case-insensitively, Unicode) */
  boilerplate?: readonly string[]
  /** ة → ه (off by default) */
  taaMarbutaToHa?: boolean
  /** ؤ → و and ئ → ي (off by default) */
  hamzaCarriers?: boolean
}

const ALEF_VARIANTS = /[\u0622\u0623\u0625\u0671]/g // آ أ إ ٱ
const TATWEEL = /\u0640/g
const ARABIC_LETTER = /[\u0621-\u064A\u0671-\u06D3]/
const LTR_RUN = /[A-Za-z0-9\u00C0-\u024F]+(?:[ .,:/-]+[A-Za-z0-9\u00C0-\u024F]+)*/g

/**
 * Text extracted from some PDFs comes out in visual order: each line reversed character by character.
 * The definite article tells: logical text has many words starting with ال, visual text many ending
 * with لا. When the reversed form clearly dominates, each line with Arabic in it is reversed back, and
 * the left-to-right runs inside it (digits, Latin words) are turned the right way again.
 */
export function repairReversedArabic(text: string): string {
  const words = text.match(/[\u0621-\u064A]+/g) ?? []
  if (words.length < 4) return text
  let forward = 0
  let reversed = 0
  for (const w of words) {
    if (w.length < 3) continue
    if (w.startsWith('\u0627\u0644')) forward++
    if (w.endsWith('\u0644\u0627')) reversed++
  }
  if (reversed < 2 || reversed <= forward * 2) return text
  const reverse = (s: string) => Array.from(s).reverse().join('')
  return text
    .split('\n')
    .map((line) => (ARABIC_LETTER.test(line) ? reverse(line).replace(LTR_RUN, reverse) : line))
    .join('\n')
}

export function canonicalize(raw: string, options: CanonicalizeOptions = {}): string {
  // NFKC also folds presentation forms (U+FB50–U+FDFF, U+FE70–U+FEFF); control characters (pdf.js
  // gives NUL for glyphs without a Unicode mapping) become spaces.
  let text = raw.normalize('NFKC').replace(/[\u0000-\u0008\u000B-\u001F\u007F]/g, ' ')
  text = repairReversedArabic(text)
  text = text.replace(ALEF_VARIANTS, '\u0627').replace(TATWEEL, '')
  if (options.taaMarbutaToHa) text = text.replace(/\u0629/g, '\u0647')
  if (options.hamzaCarriers) text = text.replace(/\u0624/g, '\u0648').replace(/\u0626/g, '\u064A')
  for (const pattern of options.boilerplate ?? []) text = text.replace(new RegExp(pattern, 'giu'), ' ')
  return text.replace(/\s+/gu, ' ').trim()
}

/** Pages shorter than this after canonicalization are skipped as non-content (spec: 50 characters). */
export function contentPages(pages: readonly string[], minChars: number, options: CanonicalizeOptions = {}): string[] {
  return pages.map((p) => canonicalize(p, options)).filter((p) => p.length >= minChars)
}

/** Share of letters that are Arabic; used to tell the language of a page. */
export function arabicShare(text: string): number {
  let arabic = 0
  let letters = 0
  for (const ch of text) {
    if (ARABIC_LETTER.test(ch)) {
      arabic++
      letters++
    } else if (/\p{L}/u.test(ch)) letters++
  }
  return letters === 0 ? 0 : arabic / letters
}
