// The text of a discovered document, in two forms (spec §1, scraper pipeline step 1):
// - canonicalize: the text as written, which chunks store and answers quote: Unicode NFC, with only the
//   typesetting forms folded (Arabic presentation forms to letters, Latin ligatures to their letters:
//   compatibilityForms), so that notation stays as the page writes it (x², ½, µ, °, ⁿ, Greek), the sure repairs of Arabic text layers (repairArabicLayer:
//   kashida strokes, detached marks, ligatures read backwards), control characters as spaces, reversed
//   Arabic lines put back in reading order, per-source boilerplate removed, whitespace collapsed. Letters and punctuation
//   stay as the source has them (hamza forms, taa marbuta, tatweel, full stops, colons);
// - matchingForm: that text folded for comparisons only (SimHash fingerprints, lengths of content):
//   Unicode's compatibility form (x² as x2, ½ as 1/2, µ as μ), the formula markup of subscripts and
//   superscripts taken off (E_(c) as Ec), alef forms to bare alef, tatweel removed, and, as a source asks, taa marbuta to ha and the hamza
//   carriers to their letters. Full-text search folds in SQL (private.search_vector).

import { withoutScriptMarkup } from './fold.ts'

export interface CanonicalizeOptions {
  /** per-source boilerplate, as regular-expression sources (matched case-insensitively, Unicode) */
  boilerplate?: readonly string[]
  /** matching form: ة → ه (off by default) */
  taaMarbutaToHa?: boolean
  /** matching form: ؤ → و and ئ → ي (off by default) */
  hamzaCarriers?: boolean
}

/** Arabic letters, as the inside of a regular-expression character class. */
export const AR_LETTER = '\u0621-\u064A\u0671-\u06D3'
/** The marks written over or under them (harakat, tanwin, shadda, sukun, the dagger alef), likewise. */
export const AR_MARK = '\u064B-\u065F\u0670'

const ALEF_VARIANTS = /[\u0622\u0623\u0625\u0671]/g // آ أ إ ٱ
const TATWEEL = /\u0640/g
const ARABIC_LETTER = new RegExp(`[${AR_LETTER}]`)
const LTR_RUN = /[A-Za-z0-9\u00C0-\u024F]+(?:[ .,:/-]+[A-Za-z0-9\u00C0-\u024F]+)*/g

/**
 * Text extracted from some PDFs comes out in visual order: each line reversed character by character.
 * The definite article tells: logical text has many words starting with ال, visual text many ending
 * with لا. When the reversed form clearly dominates, each line with Arabic in it is reversed back, and
 * the left-to-right runs inside it (digits, Latin words) are turned the right way again, and the marks
 * on a letter put back in canonical order.
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
    // (in canonical order again: turned round, the marks on one letter come in the reverse order)
    .map((line) => (ARABIC_LETTER.test(line) ? reverse(line).replace(LTR_RUN, reverse).normalize('NFC') : line))
    .join('\n')
}

const ISOLATED_MARK = /[\uFC5E-\uFC63\uFE70\uFE72\uFE74\uFE76\uFE78\uFE7A\uFE7C\uFE7E]/g

// The forms a typesetter draws, not a writer writes: Latin ligatures (ﬁ, ﬂ, ﬀ, ﬃ, ﬄ, ﬅ, ﬆ), Arabic
// presentation forms (U+FB50–U+FDFF, U+FE70–U+FEFF), fullwidth forms, the spaces of fixed widths, and the
// italic letters of a Unicode maths font (𝑥, 𝐾, ℎ: U+1D400–U+1D7FF, U+210E)
const TYPESETTING_FORMS = /[\uFB00-\uFB06\uFB50-\uFDFF\uFE70-\uFEFF\uFF01-\uFF5E\u00A0\u2000-\u200A\u202F\u210E\u{1D400}-\u{1D7FF}]+/gu

/**
 * The typesetting forms folded to the characters they draw (Unicode's compatibility form of them only),
 * then NFC; the increment sign ∆, which maths fonts name "Delta" and pdf.js reads so, as the Greek Δ.
 * Everything else stays as written: x², ½, µ, °, ⁿ, ₁, ™ (NFKC would make them x2, 1/2, μ...).
 */
export function compatibilityForms(text: string): string {
  return text.replace(TYPESETTING_FORMS, (forms) => forms.normalize('NFKC')).replace(/\u2206/g, '\u0394').normalize('NFC')
}

/** The text as written (the folding options are for matchingForm and are not applied here). */
export function canonicalize(raw: string, options: CanonicalizeOptions = {}): string {
  // the typesetting forms folded (compatibilityForms); control characters (pdf.js gives NUL for glyphs
  // without a Unicode mapping) become spaces.
  // a mark's isolated presentation form (U+FC5E–U+FC63, the even ones of U+FE70–U+FE7E) decomposes to a space
  // and the mark: the mark only, or the space would split the word it is drawn on
  // a layer in visual order is put in reading order before its marks are put back on their letters: read
  // backwards, a mark stands before its letter ("ّنأ" for "أنّ"), so the repair that moves a mark after a
  // space onto the letter before it would take it to the end of the word before
  let text = repairArabicLayer(
    repairReversedArabic(compatibilityForms(repairTexLigatures(repairSwappedLigatures(raw)).replace(ISOLATED_MARK, (c) => c.normalize('NFKC').trimStart()))),
  ).replace(
    /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g,
    ' ',
  )
  for (const pattern of options.boilerplate ?? []) text = text.replace(new RegExp(pattern, 'giu'), ' ')
  return text.replace(/\s+/gu, ' ').trim()
}

const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F]/

/**
 * Control characters that a PDF's fonts give for kashida: the connecting strokes a typesetter that
 * justifies Arabic (LibreOffice) draws between two joined letters, with no character behind them, which
 * pdf.js reads as the glyph's code (U+0003). A code that stands two or more times in a row inside an Arabic
 * word is such a stroke (a letter the font cannot map never repeats like that); all its occurrences
 * inside words are strokes too.
 */
export function kashidaCodes(text: string): Set<string> {
  const codes = new Set<string>()
  for (const m of text.matchAll(new RegExp(`(?<=[${AR_LETTER}${AR_MARK}])(${CONTROL.source})\\1+(?=[${AR_LETTER}])`, 'gu'))) codes.add(m[1]!)
  return codes
}

/**
 * Repairs of Arabic text layers that are sure, whatever the font: each undoes a way a typesetter's glyphs
 * map back to characters, and none can change text that was right.
 * - kashida strokes (kashidaCodes) inside words are taken out ("معرف\u0003\u0003ة" → "معرفة");
 * - a mark that came out after a space goes back onto the letter before it ("أن ّ", "الدَّرْس ُالأوّل"):
 *   no Arabic word begins with a mark; one left at the start of a word, with no letter before it, is
 *   dropped;
 * - lam-alef drawn as one glyph and read as two words ("ل ا" for "لا");
 * - the ligature of the name of God read backwards ("اهلل" for "الله"), and lam with alef maqsura read
 *   backwards ("عىل" for "على", "إىل" for "إلى"): alef maqsura only ends a word, so "ىل" never stands in one;
 * - a brace that a font's connecting glyph maps to, between two letters of a word ("ال{كريم"), and the
 *   asterisks that a font's kashida glyph maps to (LibreOffice with KacstBook: "وص**ار"): no text writes
 *   either between two letters of a word; the same connector of Amiri between lam and kaf mapped to a
 *   tatweel by XeLaTeX ("الـكريم", "لـكنني");
 * - the alef of a lam-alef ligature mapped to U+061D, the end-of-text mark ("الإسل؝م", XeLaTeX with Noto
 *   Naskh Arabic): a sign that closes a text, never written after a letter of a word.
 */
export function repairArabicLayer(text: string): string {
  if (!/[\u0600-\u06FF]/.test(text)) return text
  let out = text
  for (const code of kashidaCodes(out)) {
    out = out.replace(new RegExp(`(?<=[${AR_LETTER}${AR_MARK}])\\u${code.charCodeAt(0).toString(16).padStart(4, '0')}+(?=[${AR_LETTER}])`, 'gu'), '')
  }
  out = out
    .replace(new RegExp(`([${AR_LETTER}][${AR_MARK}]*)([ \\t]+)([${AR_MARK}]+)`, 'gu'), '$1$3$2')
    .replace(new RegExp(`(^|[\\s\\p{P}])[${AR_MARK}]+(?=[${AR_LETTER}])`, 'gu'), '$1')
    .replace(new RegExp(`(?<![${AR_LETTER}${AR_MARK}])([وف]?)ل ا(?![${AR_LETTER}${AR_MARK}])`, 'gu'), '$1لا')
    .replace(new RegExp(`(?<![${AR_LETTER}${AR_MARK}])([وف]?ب?)اهلل(?![${AR_LETTER}${AR_MARK}])`, 'gu'), '$1الله')
    .replace(new RegExp(`\u0649\u0644(?![${AR_LETTER}${AR_MARK}])`, 'gu'), '\u0644\u0649')
    .replace(new RegExp(`(?<=[${AR_LETTER}])[{}*]+(?=[${AR_LETTER}])`, 'gu'), '')
    .replace(/(?<=\u0644)\u0640(?=\u0643)/g, '')
    .replace(new RegExp(`(?<=\u0644[${AR_MARK}]*)\u061D`, 'gu'), '\u0627')
  return out
}

// a character whose high byte is a Latin letter and whose low byte is zero (U+6600 for "f"): CJK or Hangul
// in the text, the ligature of a Latin font in the PDF
const SWAPPED = '\u4100-\u5A00\u6100-\u7A00\uC000-\uFF00'
const SWAPPED_RUN = new RegExp(`(?<=[A-Za-z\u00C0-\u024F])[${SWAPPED}]+|[${SWAPPED}]+(?=[A-Za-z\u00C0-\u024F])`, 'gu')

/**
 * The ligatures of a Latin font that Ghostscript (10.0, `gs -sDEVICE=pdfwrite`, the usual way to make a
 * PDF smaller) maps back in the wrong byte order: each character of "ff", "fi", "fl" written low byte
 * first, so that "ff" reads as U+6600 U+6600 ("昀昀") and "fl" as U+6600 U+6C00 ("昀氀"), and in "ffi" and
 * "ffl" the last two letters as one code, their sum ("o昀케ciel": U+CF00 is f + i). A run of such
 * characters touching a Latin letter is read back: no text writes an ideograph or a Hangul syllable
 * inside a Latin word. Each code whose high byte is an ASCII letter gives that letter; a code past "z"
 * gives the letter before it once more and the one that makes up the sum with it (U+6600 U+CF00: f, f, i).
 */
export function repairSwappedLigatures(text: string): string {
  if (!/[\u4100-\uFF00]/.test(text)) return text
  return text.replace(SWAPPED_RUN, (run) => {
    let out = ''
    for (const ch of run) {
      const code = ch.charCodeAt(0)
      const high = code >> 8
      if ((code & 0xff) !== 0) return run
      if ((high >= 0x41 && high <= 0x5a) || (high >= 0x61 && high <= 0x7a)) out += String.fromCharCode(high)
      else {
        const last = out.at(-1)
        const rest = last ? high - last.charCodeAt(0) : 0
        if (!last || rest < 0x61 || rest > 0x7a) return run
        out += last + String.fromCharCode(rest)
      }
    }
    return out
  })
}

// TeX's Cork (T1) encoding puts the ligatures ff, fi, fl, ffi and ffl at codes 0x1B to 0x1F
const CORK_LIGATURES: Record<string, string> = { '\u001B': 'ff', '\u001C': 'fi', '\u001D': 'fl', '\u001E': 'ffi', '\u001F': 'ffl' }
const LATIN = 'A-Za-z\u00C0-\u024F'
const CORK_IN_WORD = new RegExp(`(?<=[${LATIN}])[\u001B-\u001F]+|[\u001B-\u001F]+(?=[${LATIN}])`, 'gu')
const OTHER_CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001A]/

// and œ, Œ where Latin-1 has ÷ and ×
// (× only where a word starts: "a×b" is a product)
const CORK_OE = new RegExp(`(?<=[${LATIN}'’]|^|\\s)\u00F7(?=[${LATIN}])|(?<=['’]|^|\\s)\u00D7(?=[${LATIN}])`, 'gu')

/**
 * The ligatures of a font in TeX's Cork encoding (pdflatex with \usepackage[T1]{fontenc}) that a PDF's
 * text layer leaves unmapped, so that pdf.js gives their codes, 0x1B to 0x1F ("o\u001Eciel" for "officiel"):
 * the Type 3 fonts that pdflatex makes of TeX's bitmap fonts (T1 without the cm-super fonts) map nothing,
 * and Ghostscript drops the glyph names when it rewrites such a PDF (`gs -sDEVICE=pdfwrite`). A code of
 * that range touching a Latin letter is its ligature, when the text holds no other control code (a font
 * whose every glyph is unmapped gives codes from 1 up, and is left to the readability check); in such a
 * text, œ and Œ, read as Latin-1's ÷ and × ("C÷ur", "l'÷uvre"), before a letter are read back too.
 */
export function repairTexLigatures(text: string): string {
  if (!/[\u001B-\u001F]/.test(text) || OTHER_CONTROL.test(text)) return text
  return text.replace(CORK_IN_WORD, (codes) => Array.from(codes, (c) => CORK_LIGATURES[c]!).join('')).replace(CORK_OE, (c) => (c === '\u00F7' ? 'œ' : 'Œ'))
}

/** The canonical text folded for comparisons (fingerprints, content lengths); never stored or shown. */
export function matchingForm(text: string, options: CanonicalizeOptions = {}): string {
  let folded = withoutScriptMarkup(text).normalize('NFKC').replace(ALEF_VARIANTS, '\u0627').replace(TATWEEL, '')
  if (options.taaMarbutaToHa) folded = folded.replace(/\u0629/g, '\u0647')
  if (options.hamzaCarriers) folded = folded.replace(/\u0624/g, '\u0648').replace(/\u0626/g, '\u064A')
  return folded.replace(/\s+/gu, ' ').trim()
}

/**
 * The canonical text of each page that has content: at least `minChars` characters once folded
 * (tatweel alone is not content). Spec: 50 characters.
 */
export function contentPages(pages: readonly string[], minChars: number, options: CanonicalizeOptions = {}): string[] {
  return pages.map((p) => canonicalize(p, options)).filter((p) => matchingForm(p, options).length >= minChars)
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
