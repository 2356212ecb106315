// The text of a page from its runs: touching runs joined into words, lines of Arabic put in reading order
// (right to left, with runs of numbers or Latin words left to right), mirrored runs and the marks that
// typesetters draw apart put back on their letters.
import { AR_LETTER, AR_MARK } from '../text/canonicalize.ts'
import { adjacent, ARABIC, fontSize, middle, right, type TextRun, TOUCH, touches, withoutRoomBeforeClosing } from './text-runs.ts'

/**
 * The text of a page from its runs, in the order pdf.js gives them (the content stream's), with a space
 * or a line break between runs, except that runs which touch on the same line are one word: typesetters
 * split a word where its shaping or kerning changes (Arabic "حركة" drawn as "حر" and "كة"), and the
 * pieces of a right-to-left word may come in either order, so they are put right to left. A line of
 * Arabic whose words did not come right to left (Chromium draws a line glyph by glyph from its left end,
 * XeLaTeX run by run, LibreOffice breaks a justified line at a number) is put in reading order: its words
 * right to left, a run of numbers or Latin words in it left to right.
 */
export function joinItems(drawn: readonly TextRun[]): string {
  const items = marksCarriedOver(unmirrored(withoutRoomBeforeClosing(drawn)))
  let text = ''
  let word: TextRun[] = []
  let line: { text: string; x: number; right: number; separator: string }[] = []
  let runs: TextRun[] = []
  const flush = (separator: string) => {
    if (word.length === 0) return
    // right to left when any piece is: pdf.js marks a lone Arabic comma after digits "ltr"
    const rtl = word.some((w) => w.dir === 'rtl' || ARABIC.test(w.str))
    const ordered = word.length === 1 ? word : [...word].sort((a, b) => (rtl ? b.transform[4]! - a.transform[4]! : a.transform[4]! - b.transform[4]!))
    line.push({
      text: withDrawnMarks(ordered),
      x: word.reduce((min, w) => Math.min(min, w.transform[4]!), Infinity),
      right: Math.max(...word.map(right)),
      separator,
    })
    word = []
  }
  const endLine = () => {
    if (outOfReadingOrder(line)) text += readingOrder(runs) + (line.at(-1)?.separator === '\n' ? '\n' : ' ')
    else {
      wordFinalMarks(line)
      text += line.map((w) => w.text + w.separator).join('')
    }
    line = []
    runs = []
  }
  for (const [i, item] of items.entries()) {
    word.push(item)
    runs.push(item)
    const next = items[i + 1]
    // a mark drawn apart (no width) does not part the pieces of a word around it
    const after = next && drawnMark(next) ? items[i + 2] : undefined
    if (!item.hasEOL && next && (touches(item, next) || (after !== undefined && touches(item, after)))) continue
    flush(item.hasEOL ? '\n' : ' ')
    if (item.hasEOL) endLine()
  }
  flush('')
  endLine()
  return text
}

// numbers and Latin words inside a right-to-left run: they read left to right whatever the run does
const LTR_RUN = /[A-Za-z0-9\u00C0-\u024F\u0660-\u0669]+(?:[ .,:/-]+[A-Za-z0-9\u00C0-\u024F\u0660-\u0669]+)*/g
const reversed = (s: string) => Array.from(s).reverse().join('')

/**
 * Runs drawn with their text matrix mirrored, advancing leftwards from where they start: the invisible
 * text that tesseract lays over a scan (ocrmypdf, and the scanners' software built on it) writes each
 * right-to-left word so, its characters in reading order. pdf.js takes every right-to-left run for one
 * drawn left to right and turns its characters round ("الدرس" read "سردلا"), places it from its right end,
 * and, seeing the pen go back, ends a line after such words, or not where one ends. Such a run is turned
 * back (its numbers and Latin words kept left to right), placed from its left end, and ends a line where
 * the next run is on another line.
 */
function unmirrored(items: readonly TextRun[]): readonly TextRun[] {
  if (!items.some(mirrored)) return items
  return items.map((r, i) => {
    if (!mirrored(r)) return r
    const next = items[i + 1]
    // the line ends where the next run is on another line (an empty run that pdf.js gives to mark a line's end keeps its say)
    const lineEnds = next === undefined || next.str === '' ? r.hasEOL : Math.abs(next.transform[5]! - r.transform[5]!) > fontSize(r) * 0.3
    const str = r.dir === 'rtl' ? reversed(r.str).replace(LTR_RUN, reversed) : r.str
    const [a, b, c, d, e, f] = r.transform as [number, number, number, number, number, number]
    return { ...r, str, transform: [-a, b, c, d, e - r.width, f], hasEOL: lineEnds }
  })
}

// a letter, or its presentation form (which pdf.js gives for text shaped before it was drawn)
const LETTER_OR_FORM = `${AR_LETTER}\uFB50-\uFDFF\uFE80-\uFEFC`
const LEADING_ARABIC_MARKS = new RegExp(`^[${AR_MARK}]+(?=[${LETTER_OR_FORM}])`)
const ENDS_WITH_ARABIC_LETTER = new RegExp(`[${LETTER_OR_FORM}][${AR_MARK}]*$`)

/**
 * A mark that ends the last word of a line drawn in visual order (ReportLab or fpdf2 after arabic_reshaper
 * and python-bidi, the harakat kept: "ملخّصاً" at the left end of a line) is the first glyph the line draws,
 * of no width, and pdf.js puts it in the run before, the line above, which it turns round: the mark comes
 * out at the start of that line ("ًنستعمل"). No Arabic word begins with a mark: marks that start a run
 * whose next run lies on another line and ends with a letter go back to the end of that run.
 */
function marksCarriedOver(items: readonly TextRun[]): readonly TextRun[] {
  let out: TextRun[] | undefined
  for (let i = 0; i < items.length; i++) {
    const run = (out ?? items)[i]!
    const marks = LEADING_ARABIC_MARKS.exec(run.str)?.[0]
    if (!marks) continue
    let j = i + 1
    while (j < items.length && items[j]!.str.trim() === '') j++
    const next = items[j]
    if (!next || Math.abs(next.transform[5]! - run.transform[5]!) <= fontSize(run) * 0.3 || !ENDS_WITH_ARABIC_LETTER.test(next.str)) continue
    out ??= [...items]
    out[i] = { ...run, str: run.str.slice(marks.length) }
    out[j] = { ...next, str: next.str + marks }
  }
  return out ?? items
}

/** A run whose text matrix is mirrored left to right on a horizontal line. */
const mirrored = (r: TextRun) => r.transform[0]! < 0 && Math.abs(r.transform[1]!) < Math.abs(r.transform[0]!) * 0.1 && r.width > 0

// marks at a word's start, after an opening quote or bracket if any
const LEADING_MARKS = new RegExp(`^([«"'(\\[]*)([${AR_MARK}]+)`)
const ENDS_WITH_LETTER = new RegExp(`[${AR_LETTER}]$`)

/**
 * A mark that ends a word (tanwin, a final haraka or shadda: "عاصٍ", "عاريّةً") comes out of pdf.js at the
 * start of the word before it when a typesetter draws it after its letter's word (pdfkit: "فهو عاصٍ" as
 * "ٍفهو" and "عاص"). No Arabic word begins with a mark: one that starts a word, when the next word of the
 * line lies to its left and ends with a letter, goes back to the end of that word.
 */
function wordFinalMarks(line: { text: string; x: number; right: number }[]): void {
  for (let i = 0; i + 1 < line.length; i++) {
    const [lead, open = '', marks = ''] = LEADING_MARKS.exec(line[i]!.text) ?? []
    const next = line[i + 1]!
    if (!lead || lead.length === line[i]!.text.length || next.right > line[i]!.x + 1 || !ENDS_WITH_LETTER.test(next.text)) continue
    line[i]!.text = open + line[i]!.text.slice(lead.length)
    next.text += marks
  }
}

/**
 * The text with a mark put on its letter at `share` of the way (0 to 1) from where it starts to be
 * read, counted among the letters (the marks already carried take no room), after the marks already on it.
 */
function markOnLetter(text: string, share: number, mark: string): string {
  const chars = Array.from(text)
  const letters = chars.flatMap((c, k) => (/\p{M}/u.test(c) ? [] : [k]))
  if (letters.length === 0) return text + mark
  let at = letters[Math.min(letters.length, Math.max(1, Math.ceil(share * letters.length))) - 1]! + 1
  while (at < chars.length && /\p{M}/u.test(chars[at]!)) at++
  chars.splice(at, 0, mark)
  return chars.join('')
}

/** A mark drawn as a run of its own, of no width. */
const drawnMark = (r: TextRun) => r.width === 0 && MARKS_ONLY.test(r.str)

/**
 * A word's pieces joined; a mark drawn as a piece of its own inside another piece's span (pdfkit draws
 * "الصيفَ" as "َ" over "الصيف") goes on the letter under it, not before the whole piece.
 */
function withDrawnMarks(pieces: readonly TextRun[]): string {
  const marks = pieces.filter(drawnMark)
  if (marks.length === 0) return pieces.map((p) => p.str).join('')
  const texts = new Map(pieces.map((p) => [p, p.str]))
  for (const m of marks) {
    const x = m.transform[4]!
    const base = pieces.find((p) => p !== m && p.width > 0 && ARABIC.test(p.str) && p.transform[4]! <= x && x <= right(p))
    if (!base) continue
    texts.set(base, markOnLetter(texts.get(base)!, (right(base) - x) / base.width, m.str))
    texts.set(m, '')
  }
  return pieces.map((p) => texts.get(p)!).join('')
}

const ARABIC_LETTERS = new RegExp(`[${AR_LETTER}]`, 'g')
const HAS_ARABIC_LETTER = new RegExp(`[${AR_LETTER}]`)
const LATIN_LETTERS = /[A-Za-z\u00C0-\u024F]/g

/**
 * Whether a line is mostly Arabic and its Arabic words did not come right to left: drawn from the left
 * end (Chromium glyph by glyph, XeLaTeX run by run around a Latin word), or in pieces out of order
 * (LibreOffice breaks a justified line at a number: "يقرأ 25 كبيرة. كل أسبوع يتقدّم بسرعة صفحة").
 */
function outOfReadingOrder(line: readonly { text: string; x: number }[]): boolean {
  const all = line.map((w) => w.text).join(' ').normalize('NFKC')
  if ((all.match(ARABIC_LETTERS) ?? []).length <= (all.match(LATIN_LETTERS) ?? []).length) return false
  // words with Arabic letters (a mark drawn on its own is placed where its letter is, not where a word starts)
  const arabic = line.filter((w) => HAS_ARABIC_LETTER.test(w.text.normalize('NFKC')))
  for (let i = 1; i < arabic.length; i++) if (arabic[i]!.x > arabic[i - 1]!.x) return true
  return false
}

const MARKS_ONLY = /^\p{M}+$/u

/**
 * A line's runs in reading order by their place on the line: right to left by their middles, a run of
 * numbers or Latin words left to right; a space where two runs stand apart, none where they touch. A mark
 * drawn as a run of its own (Chromium draws a shadda apart from its letter) goes after the letter under
 * it, inside its word.
 */
function readingOrder(line: readonly TextRun[]): string {
  // a mark drawn apart: marks only (or their presentation forms, "ﱠ" for shadda with fatha), or a glyph
  // of no width (a mark by its nature) that maps to nothing, or to a mark with something else ("0ّ"): its
  // marks are kept, the rest dropped rather than read as a word of its own that splits the word under it
  const isMark = (r: TextRun) =>
    MARKS_ONLY.test(r.str.normalize('NFKC').trim()) || (r.width === 0 && /^[\p{M}\p{N}\u0000-\u001F\uFFFD]+$/u.test(r.str) && !/^\p{N}+$/u.test(r.str))
  // a space of no width, or one drawn over a letter, is not a word space (pdf.js puts one where a mark
  // moved the pen back)
  const letters = line.filter((r) => r.str.trim() !== '' && r.width > 0)
  const kept = line.filter((r) =>
    r.str.trim() !== '' || (r.width >= fontSize(r) * 0.01 && !letters.some((l) => middle(r) > l.transform[4]! && middle(r) < right(l)))
  )
  const marks = kept.filter(isMark)
  const placed = kept.filter((r) => !isMark(r)).map((r) => ({ run: r, text: r.str }))
  const bases = placed.filter((p) => p.run.str.trim() !== '')
  for (const mark of marks) {
    const drawn = mark.str.normalize('NFKC').replace(/\P{M}/gu, '')
    if (drawn === '') continue
    const x = mark.transform[4]!
    // the run under the mark: a mark is drawn from about its letter's left edge, so the run that starts
    // nearest at or before it (a little after, too), else the nearest
    const under = bases.filter((p) => p.run.transform[4]! <= x + fontSize(mark) * TOUCH && x <= right(p.run))
    const base = under.sort((a, b) => b.run.transform[4]! - a.run.transform[4]!)[0] ??
      [...bases].sort((a, b) => Math.abs(middle(a.run) - x) - Math.abs(middle(b.run) - x))[0]
    if (!base) continue
    // the character under it: a right-to-left run's characters go from its right end
    const share = base.run.width > 0 ? (ARABIC.test(base.text) ? right(base.run) - x : x - base.run.transform[4]!) / base.run.width : 1
    base.text = markOnLetter(base.text, share, drawn)
  }
  const ordered = placed.sort((a, b) => middle(b.run) - middle(a.run))
  // runs without Arabic (numbers, Latin words and the spaces between them) read left to right
  // (punctuation at either end of such a run goes with the right-to-left text around it, as Unicode's
  // bidirectional algorithm reads it: the full stop drawn left of a formula that ends a sentence ends it)
  const neutral = (p: { text: string }) => /^[\s\p{P}]*$/u.test(p.text)
  const glued = new Set<(typeof ordered)[number]>()
  for (let i = 0; i < ordered.length;) {
    if (neutral(ordered[i]!) || ARABIC.test(ordered[i]!.text)) {
      i++
      continue
    }
    let j = i
    for (let k = i; k < ordered.length && !ARABIC.test(ordered[k]!.text); k++) if (!neutral(ordered[k]!)) j = k
    // the sign drawn against the run's left end closes it, though it no longer stands beside it once the run is turned
    const sign = ordered[j + 1]
    if (sign && /^[.,،؛]/.test(sign.text) && adjacent(sign.run, ordered[j]!.run)) glued.add(sign)
    ordered.splice(i, j - i + 1, ...ordered.slice(i, j + 1).reverse())
    i = j + 1
  }
  let out = ''
  for (const [i, p] of ordered.entries()) {
    const before = ordered[i - 1]
    if (
      before && before.text.trim() !== '' && p.text.trim() !== '' && !/\s$/.test(before.text) && !/^\s/.test(p.text) && !adjacent(before.run, p.run) &&
      !glued.has(p)
    ) out += ' '
    out += p.text
  }
  return out.replace(/\s+/g, ' ').trim()
}
