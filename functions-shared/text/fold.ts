// The folded form of a text, for matching only (what students read is never folded): the folding of
// the search index (private.search_vector in SQL), done in TypeScript for the offline embedder, the
// offline rerank and the subject names. Every step works letter by letter, so a text may be folded
// whole and cut into words after: cutting first would break a vowelled Arabic word at each of its
// marks (a haraka is not a letter), and "كَتَبَ" would be three one-letter words.

// format characters (Unicode Cf): the zero-width joiner and non-joiner, the soft hyphen, the bidi marks,
// embeddings and isolates, the word joiner, the BOM. Invisible, and written inside words by keyboards and
// copied text (الإس‌لام, équa­tion): a word holding one is the word without it, not two pieces. The
// zero-width space (U+200B) stays: it parts words, as a space does.
const FORMAT_CHARACTERS = /(?!\u200B)\p{Cf}/gu

/**
 * The markup that extraction writes for a raised or lowered run with no Unicode superscript or subscript
 * form (E_(c), x^(q)) taken off, as NFKD takes Unicode's off (xₙ as xn, x² as x2): a student types Ec.
 */
export const withoutScriptMarkup = (text: string): string => (/[_^]\(/.test(text) ? text.replace(/[_^]\(([^()]*)\)/g, '$1') : text)

/**
 * The markup of subscripts and superscripts taken off (withoutScriptMarkup), and Unicode's compatibility
 * forms decomposed (x² as x2, ½ as 1/2); format characters (zero-width joiners, soft hyphens, bidi controls) removed; lower case; Latin accents, Arabic diacritics (harakat, tanwin, shadda, sukun, the dagger alef, the
 * hamza NFKD splits off its seat) and tatweel removed; alef forms, taa marbuta (as ha) and alef maqsura
 * (as ya) folded; the Hassaniya gaf as qaf; the Persian forms of yeh, kaf and heh that some Arabic
 * typesetting emits as the Arabic letters; Arabic-Indic digits as ASCII.
 */
export function foldText(text: string): string {
  return withoutScriptMarkup(text)
    .replace(FORMAT_CHARACTERS, '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f\u064B-\u065F\u0670\u0640]/g, '')
    .replace(/[\u0622\u0623\u0625\u0671]/g, '\u0627')
    .replace(/[\u0629\u06C1]/g, '\u0647')
    .replace(/[\u0649\u06CC]/g, '\u064A')
    .replace(/\u06A9/g, '\u0643')
    .replace(/[\u06AF\u06AD]/g, '\u0642')
    .replace(/[\u0660-\u0669]/g, (d) => String(d.charCodeAt(0) - 0x0660))
    .toLowerCase()
}

/** The words of a folded text (letters and digits), in order. */
export const foldedWords = (text: string): string[] => foldText(text).split(/[^\p{L}\p{N}]+/u).filter(Boolean)
