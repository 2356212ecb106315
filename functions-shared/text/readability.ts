// Whether a page's extracted text reads as written, before anything is stored (issue: verified text
// layers). A PDF's text layer is only as good as its fonts' character maps: Arabic comes out split
// inside words ("كة حر" for "حركة"), with lam-alef reversed ("اإلسالم" for "الإسلام"), or with glyphs
// that map to nothing; French comes out as encoding garbage ("Ã©" for "é"). Such a page is recognized
// from its image too, and the better reading kept (pdf/read.ts).
import { AR_LETTER, AR_MARK, arabicShare, canonicalize, kashidaCodes, repairTexLigatures } from './canonicalize.ts'
import { turnedNameOfGod } from './lam-alef.ts'

export interface Readability {
  /** false when the problems are too many for the text to be stored as it is */
  readable: boolean
  /** problems per word (0 for clean text): two readings of one page compare by it */
  score: number
  problems: { unmapped: number; presentationForms: number; reversedLamAlef: number; brokenWords: number; mojibake: number; strange: number }
  words: number
}

// Share of words with a problem above which a page is not readable, and the least count that is
// evidence at all (one odd word in a page is a name or a typo, not a broken font).
const MAX_PROBLEM_SHARE = 0.04
const MIN_PROBLEMS = 3

// an Arabic word with its marks (a vowelled word is one word, not a piece at each haraka)
const ARABIC_WORD = new RegExp(`[${AR_LETTER}${AR_MARK}]+`, 'g')
const MARKS = new RegExp(`[${AR_MARK}]`, 'g')
// a mark on something that is not an Arabic letter (a digit, a Latin letter: "0ّ"; a grammar lesson
// shows a mark alone on tatweel or the dotted circle), or a sign inside an Arabic word that no text
// writes there (U+061D, U+061E, what a font's ligature glyph maps to)
const MISPLACED_MARK = new RegExp(`[^${AR_LETTER}${AR_MARK}\\u25CC\\s][${AR_MARK}]`, 'g')
const SIGN_IN_WORD = /[\u0621-\u064A][\u061D\u061E{}[\]|\\<>^~][\u0621-\u064A]/g
// letters that never start a word (taa marbuta, alef maqsura, the hamza on a seat below or on waw)
const NEVER_INITIAL = /^[\u0629\u0649\u0624]/
// the article before an alef, in visual order: "اإل", "األ", "اآل", "اال" (with a proclitic; no word
// begins with two alefs)
const REVERSED_ARTICLE = /^[\u0648\u0641\u0628\u0643\u0644]?\u0627[\u0627\u0623\u0625\u0622]\u0644/
// a layer whose lam-alef reads backwards shows it in every word that has one; the article's form is sure
// (no typo writes it), so this many such words are a font's doing however long the page
const MIN_REVERSED_ARTICLES = 2
// one-letter words that Arabic writes on their own: letters used as symbols and numbering (أ ب ج د,
// س ص in equations, م for the common era, هـ for the hijri year)
const SINGLE_LETTERS = new Set(Array.from('أبجدهوزحطيسصعمنكلقرشتثخذضظغف'))
// the two-letter words of Arabic and Hassaniya; a two-letter piece that is none of them is a word cut in
// two (the article "ال" alone, "كة" of "حركة")
const TWO_LETTER_WORDS = new Set(
  'في من عن بن أن إن ان ما لا لم لن قد هو هي ثم كل بل إذ اذ ذو ذا كم مع يا أي اي هل له لك لي به بك بي إلى الى أو او نحن هم هن أم ام كي لو ته تم مد حق حر جو بر يد دم أب اب أخ اخ سن فم ضد حد عد صف مر قل خط شك سر رب عم ود ظل كف فن غد رد ند سد مس حب مد شد قط فك صح جد هن ذي تي دي زي شي بو إي وي نا ها'
    .split(' '),
)
const MOJIBAKE = /Ã[\u0080-\u00BF]|Â[\u0080-\u00BF\u00A0]|â€|Ø[\u00A0-\u00BF]|Ù[\u0080-\u00BF]/g

export function readability(raw: string): Readability {
  // kashida strokes read as control codes are not missing letters (canonicalize takes them out)
  const kashida = kashidaCodes(raw.normalize('NFKC'))
  // nor are the ligatures of a TeX font that canonicalize reads back (repairTexLigatures)
  const unmapped = (repairTexLigatures(raw).match(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFD\uE000-\uF8FF]/g) ?? []).filter((c) => !kashida.has(c)).length
  const nfkc = raw.normalize('NFKC')
  // NFKC folds presentation forms to letters; what is left in those blocks did not fold
  const presentationForms = (nfkc.match(/[\uFB50-\uFD3D\uFD40-\uFDFF\uFE70-\uFEFF]/g) ?? []).length
  const text = canonicalize(raw)
  const mojibake = (text.match(MOJIBAKE) ?? []).length
  const strange = Array.from(text).filter((ch) => /[\p{Co}\p{Cn}\p{So}]/u.test(ch) && ch !== '\u25CC').length + (text.match(MISPLACED_MARK) ?? []).length +
    (text.match(SIGN_IN_WORD) ?? []).length
  let reversedLamAlef = 0
  let brokenWords = 0
  const arabic = (text.match(ARABIC_WORD) ?? []).map((w) => w.replace(MARKS, ''))
  for (const word of arabic) {
    if (word === '') brokenWords++
    else if (REVERSED_ARTICLE.test(word)) reversedLamAlef++
    // taa marbuta and alef maqsura end a word: a letter after one is two words run together, or a
    // ligature read backwards
    else if (NEVER_INITIAL.test(word) || /[\u0629\u0649]./.test(word)) brokenWords++
    else if (word.length === 1 && !SINGLE_LETTERS.has(word)) brokenWords++
    else if (word.length === 2 && !TWO_LETTER_WORDS.has(word)) brokenWords++
  }
  // the name of God read backwards on a page that reads no lam-alef after a joining letter the right way
  // round: the whole layer reads it backwards, in words whose shapes cannot tell ("الإسالم", "التالميذ")
  const turnedNames = turnedNameOfGod(text)
  reversedLamAlef += turnedNames
  const words = Math.max(1, (text.match(/[\p{L}\p{N}]+/gu) ?? []).length)
  const problems = { unmapped, presentationForms, reversedLamAlef, brokenWords, mojibake, strange }
  const count = unmapped + presentationForms + reversedLamAlef + brokenWords + mojibake + strange
  const score = count / words
  return {
    readable: (count < MIN_PROBLEMS || score < MAX_PROBLEM_SHARE) && reversedLamAlef < MIN_REVERSED_ARTICLES && turnedNames === 0,
    score,
    problems,
    words,
  }
}

/** Whether a page's text is mostly Arabic script (for the choice of recognizer languages). */
export const isArabicText = (text: string) => arabicShare(text) > 0.5
