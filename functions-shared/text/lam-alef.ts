// Lam-alef read backwards. Some fonts (the Arabic fonts of older word processors among them) draw lam
// followed by alef as one ligature glyph whose characters come out of the PDF in the wrong order: "لا"
// is read "ال", "الإسلام" "اإلسالم", "التلاميذ" "التالميذ". The text cannot be put right from itself,
// since alef then lam is also written as such (the article, "مثال", "قال"). The recognizer's reading of
// the same page can tell: it has no ligature to misread. Each word of the layer holding alef then lam is
// replaced by the one of its forms, with some of those pairs turned round, that the recognizer read on
// the page. The letters, marks and punctuation stay the layer's, which the recognizer may misread.
import { foldText } from './fold.ts'
import { AR_LETTER, AR_MARK } from './canonicalize.ts'

const ALEF = /^[\u0627\u0623\u0625\u0622]$/
const LAM = '\u0644'
const MARK = new RegExp(`^[${AR_MARK}\\u0640]$`)
// an Arabic word with its marks
const ARABIC_WORD = new RegExp(`[${AR_LETTER}${AR_MARK}\\u0640]+`, 'g')
// the most pairs in one word whose turns are tried (2^4 forms)
const MAX_SITES = 4

/** A word as letters, each with the marks that follow it. */
const clusters = (word: string): string[] => {
  const out: string[] = []
  for (const ch of word) {
    if (MARK.test(ch) && out.length > 0) out[out.length - 1] += ch
    else out.push(ch)
  }
  return out
}

/** The folded words of the recognizer's reading, as a set. */
function vocabulary(reading: string): Set<string> {
  return new Set((reading.match(ARABIC_WORD) ?? []).map((w) => foldText(w)))
}

/** The form of `word` that the reading holds, if turning round some of its alef-lam pairs gives one. */
function repairWord(word: string, known: ReadonlySet<string>): string | null {
  if (known.has(foldText(word))) return null
  const letters = clusters(word)
  const sites: number[] = []
  for (let i = 0; i + 1 < letters.length; i++) if (ALEF.test(letters[i]![0]!) && letters[i + 1]![0] === LAM) sites.push(i)
  if (sites.length === 0 || sites.length > MAX_SITES) return null
  // fewest turns first: the form nearest the layer wins a tie
  const subsets = Array.from({ length: (1 << sites.length) - 1 }, (_, k) => k + 1).sort((a, b) => popcount(a) - popcount(b) || a - b)
  for (const subset of subsets) {
    const turned = [...letters]
    sites.forEach((site, j) => {
      if (subset & (1 << j)) [turned[site], turned[site + 1]] = [turned[site + 1]!, turned[site]!]
    })
    const candidate = turned.join('')
    if (known.has(foldText(candidate))) return candidate
  }
  return null
}

const popcount = (n: number) => n.toString(2).replace(/0/g, '').length

// letters that join the letter after them (alef, dal, ra, waw and their kin do not): lam-alef after one
// is drawn in its final form, the glyph that some fonts map back turned round even where they map the
// lone لا right ("الإسالم", "التالميذ" beside "لا ينبغي")
const JOINING = '\u0626\u0628\u062A-\u062E\u0633-\u063A\u0640-\u0647\u064A\u067E\u0686\u06A4\u06A9\u06AF'
const JOINED_LAM_ALEF = new RegExp(`[${JOINING}][${AR_MARK}]*\u0644[${AR_MARK}]*[\u0627\u0623\u0625\u0622]`, 'u')
// the name of God, which such fonts draw as one ligature, read backwards ("هللا" for "الله"), with
// و or ف and ب before it
const TURNED_NAME = new RegExp(`(?<![${AR_LETTER}${AR_MARK}\u0640])([\u0648\u0641]?\u0628?)\u0647\u0644\u0644\u0627(?![${AR_LETTER}${AR_MARK}\u0640])`, 'gu')

/**
 * How many times a layer reads the name of God backwards ("هللا"), when nothing else on it reads
 * lam-alef the right way round; 0 otherwise. A font that draws لا after a joining letter as one glyph
 * whose characters come out turned round turns it in every word ("الإسالم", "التالميذ"), which the
 * words' shapes cannot tell ("سالم", "قالت" are words), and draws the name as a ligature that comes out
 * turned round too. A text writes "هللا" (the dual of هلّل) far too rarely to stand on a page that holds
 * not one lam-alef after a joining letter, which correct text writes in most of its pages ("الإسلام",
 * "كلام", "فلا"); a page that holds one is read as it is.
 */
export function turnedNameOfGod(text: string): number {
  const names = text.match(TURNED_NAME)?.length ?? 0
  if (names === 0) return 0
  // the name's own lam, lam and alef aside
  return JOINED_LAM_ALEF.test(text.replace(TURNED_NAME, ' ')) ? 0 : names
}

/**
 * The layer with each word whose alef-lam pairs were read backwards put right, by the recognizer's
 * reading of the same page; `repaired` counts the words changed.
 */
export function repairLamAlef(layer: string, reading: string): { text: string; repaired: number } {
  const known = vocabulary(reading)
  let repaired = 0
  // in a layer known to read lam-alef backwards, the name read backwards is the name, unless the
  // recognizer read "هللا" too (turnedNameOfGod)
  const named = turnedNameOfGod(layer) > 0 && !known.has(foldText('هللا'))
    ? layer.replace(TURNED_NAME, (_, proclitic: string) => {
      repaired++
      return `${proclitic}\u0627\u0644\u0644\u0647`
    })
    : layer
  const text = named.replace(ARABIC_WORD, (word) => {
    const fixed = repairWord(word, known)
    if (fixed === null) return word
    repaired++
    return fixed
  })
  return { text, repaired }
}

/** Words of a page compared for their order at the most (a page of a textbook holds a few hundred). */
const ORDER_WORDS = 2000

/**
 * How much of the layer's word order the reading shares: the longest common subsequence of their folded
 * words over the layer's word count (1 for the same words in the same order). A layer whose words come
 * in another order than the page shows (runs in drawing order) is no better for its letters.
 */
export function orderAgreement(layer: string, reading: string): number {
  // the first ORDER_WORDS words of each: the comparison's cost grows with the product of their counts
  const a = (layer.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, ORDER_WORDS).map((w) => foldText(w))
  const b = (reading.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, ORDER_WORDS).map((w) => foldText(w))
  if (a.length === 0) return 0
  let previous = new Array<number>(b.length + 1).fill(0)
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(0)
    for (let j = 1; j <= b.length; j++) row[j] = a[i - 1] === b[j - 1] ? previous[j - 1]! + 1 : Math.max(previous[j]!, row[j - 1]!)
    previous = row
  }
  return previous[b.length]! / a.length
}
