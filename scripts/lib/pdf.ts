// Curriculum-style PDFs made with pdfkit (the demo portal, tests and benchmarks): French text in DejaVu Sans
// (from @fontsource/dejavu-sans: Latin, Greek and the signs of maths and science, ⇌ and √ among them, which
// the standard fonts' WinAnsi encoding cannot write: a standard Helvetica drew "λ = v T" as ";²ÒbT"), Arabic
// with the Amiri font from @fontsource/amiri (shaped by fontkit, drawn left to right as pdfkit does, so
// pdf.js extracts it in visual order, as many real PDFs do).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { inflateSync } from 'node:zlib'
import PDFDocument from 'pdfkit'
import { renderPage, STANDARD_FONTS } from './render-page.ts'

const require = createRequire(import.meta.url)
const AMIRI = require.resolve('@fontsource/amiri/files/amiri-arabic-400-normal.woff')
// the Arabic subset has no digits or Latin punctuation (: . « » ( ) %): those are drawn in the Latin subset
const AMIRI_LATIN = require.resolve('@fontsource/amiri/files/amiri-latin-400-normal.woff')
/** The whole of DejaVu Sans (the package's "latin" file holds every glyph of the font). */
export const DEJAVU_SANS = require.resolve('@fontsource/dejavu-sans/files/dejavu-sans-latin-400-normal.woff')

/**
 * A WOFF font as the plain font file it wraps (its tables inflated), made once. fontkit reads a WOFF's
 * compressed tables anew at each access, the whole glyph table for each glyph drawn: set from the WOFF, a
 * six-page Arabic lesson took five seconds, almost all of it inflating.
 */
const sfntCache = new Map<string, Buffer>()
function sfnt(path: string): Buffer {
  const cached = sfntCache.get(path)
  if (cached) return cached
  const woff = readFileSync(path)
  const count = woff.readUInt16BE(12)
  const tables = Array.from({ length: count }, (_, i) => {
    const at = 44 + i * 20
    const [offset, compressed, length] = [woff.readUInt32BE(at + 4), woff.readUInt32BE(at + 8), woff.readUInt32BE(at + 12)]
    const raw = woff.subarray(offset, offset + compressed)
    return { tag: woff.subarray(at, at + 4), checksum: woff.readUInt32BE(at + 16), data: compressed < length ? inflateSync(raw) : raw }
  })
  const pad = (n: number) => (n + 3) & ~3
  const out = Buffer.alloc(12 + 16 * count + tables.reduce((sum, t) => sum + pad(t.data.length), 0))
  const power = 2 ** Math.floor(Math.log2(count))
  woff.copy(out, 0, 4, 8) // the flavor: TrueType or CFF
  out.writeUInt16BE(count, 4)
  out.writeUInt16BE(power * 16, 6)
  out.writeUInt16BE(Math.log2(power), 8)
  out.writeUInt16BE(count * 16 - power * 16, 10)
  let offset = 12 + 16 * count
  tables.forEach((t, i) => {
    const at = 12 + 16 * i
    t.tag.copy(out, at)
    out.writeUInt32BE(t.checksum, at + 4)
    out.writeUInt32BE(offset, at + 8)
    out.writeUInt32BE(t.data.length, at + 12)
    t.data.copy(out, offset)
    offset += pad(t.data.length)
  })
  sfntCache.set(path, out)
  return out
}

/** The fonts, registered under their paths (doc.font(AMIRI) finds them). */
function registerFonts(doc: PDFKit.PDFDocument): void {
  for (const path of [AMIRI, AMIRI_LATIN, DEJAVU_SANS]) doc.registerFont(path, sfnt(path))
}

const ARABIC_SUBSET = /[\u0600-\u06FF\u0750-\u077F\uFB50-\uFDFF\uFE70-\uFEFF\u200C-\u200F]/

// Amiri's kerning pulls some letter pairs apart (و and ر before ي), and pdf.js reads such a gap as a
// space inside the word ("و يأتي"): the words are set without kerning, so their text layer reads right
const NO_KERN = { features: { kern: false } } as unknown as PDFKit.Mixins.TextOptions

/**
 * Amiri's required ligatures insert a connecting glyph that stands for no character (between lam and kaf
 * in "الكريم"); it has an advance, and pdf.js reads that gap as a space inside the word ("ال كريم"). The
 * demo's PDFs leave such glyphs out, so their text layer reads as written.
 */
function dropUnmappedGlyphs(doc: PDFKit.PDFDocument) {
  const font =
    (doc as unknown as { _font: { font: { layout: (...args: unknown[]) => { glyphs: { codePoints: number[] }[]; positions: unknown[] } } } })._font.font
  const layout = font.layout.bind(font)
  font.layout = (...args) => {
    const run = layout(...args)
    const keep = run.glyphs.map((g) => g.codePoints.length > 0)
    run.glyphs = run.glyphs.filter((_, i) => keep[i])
    run.positions = run.positions.filter((_, i) => keep[i])
    return run
  }
}

// what Amiri's Latin subset draws (Latin-1 and the punctuation of Arabic text); the rest (Greek, the signs
// of maths) in DejaVu Sans
const AMIRI_LATIN_SUBSET = /[\u0000-\u00FF\u2013\u2014\u2018-\u201E\u2026]/

/** A word's runs, each in the font that has its glyphs, in reading order. */
function fontRuns(word: string): { text: string; font: string }[] {
  const runs: { text: string; font: string }[] = []
  for (const ch of word) {
    const font = ARABIC_SUBSET.test(ch) ? AMIRI : AMIRI_LATIN_SUBSET.test(ch) ? AMIRI_LATIN : DEJAVU_SANS
    const last = runs.at(-1)
    if (last?.font === font) last.text += ch
    else runs.push({ text: ch, font })
  }
  return runs
}

/**
 * `rtl` (Arabic only) lays each line out right to left as a reader sees it: the words, broken into lines
 * in reading order to fit the width, are placed from the right margin leftwards. Without it pdfkit draws
 * the words left to right (the reading order reversed on the page).
 */
export async function makePdf(pages: string[], options: { arabic?: boolean; rtl?: boolean; title?: string } = {}): Promise<Uint8Array> {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: options.title ?? 'Leçon', CreationDate: new Date(Date.UTC(2026, 0, 1)) } })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  registerFonts(doc)
  if (options.arabic) dropUnmappedGlyphs(doc.font(AMIRI))
  else doc.font(DEJAVU_SANS)
  pages.forEach((text, i) => {
    if (i > 0) doc.addPage()
    doc.fontSize(12)
    if (!(options.arabic && options.rtl)) return void doc.text(text, { align: options.arabic ? 'right' : 'left' })
    const width = doc.page.width - doc.page.margins.left - doc.page.margins.right
    const wordWidth = (word: string) => fontRuns(word).reduce((w, run) => w + doc.font(run.font).widthOfString(run.text, NO_KERN), 0)
    const space = doc.font(AMIRI).widthOfString(' ')
    const lines: string[][] = [[]]
    for (const word of text.split(/\s+/).filter(Boolean)) {
      const line = lines.at(-1)!
      if (line.length > 0 && line.reduce((w, x) => w + wordWidth(x) + space, wordWidth(word)) > width) lines.push([word])
      else line.push(word)
    }
    // each word its own text items (one per font), drawn in reading order from the right margin leftwards
    let y = doc.y
    const lineHeight = doc.font(AMIRI).currentLineHeight(true)
    for (const line of lines) {
      if (y + lineHeight > doc.page.height - doc.page.margins.bottom) {
        doc.addPage()
        y = doc.page.margins.top
      }
      let x = doc.page.width - doc.page.margins.right
      for (const word of line) {
        // the runs of a word also go right to left (a digit run keeps its own left-to-right order)
        for (const run of fontRuns(word)) {
          x -= doc.font(run.font).widthOfString(run.text, NO_KERN)
          doc.text(run.text, x, y, { lineBreak: false, ...NO_KERN })
        }
        x -= space
      }
      y += lineHeight
    }
  })
  doc.end()
  await done
  return new Uint8Array(Buffer.concat(chunks))
}

/** A page image turned by `degrees` (clockwise), on white: a page laid askew on the scanner. */
async function turn(png: Buffer, degrees: number): Promise<Buffer> {
  const { createCanvas, loadImage } = await import('@napi-rs/canvas')
  const image = await loadImage(png)
  const canvas = createCanvas(image.width, image.height)
  const g = canvas.getContext('2d')
  g.fillStyle = 'white'
  g.fillRect(0, 0, image.width, image.height)
  g.translate(image.width / 2, image.height / 2)
  g.rotate((degrees * Math.PI) / 180)
  g.translate(-image.width / 2, -image.height / 2)
  g.drawImage(image, 0, 0)
  return canvas.toBuffer('image/png')
}

/** A page image given a quarter turn, clockwise, or a half turn: a sheet fed sideways or upside down. */
async function quarterTurns(png: Buffer, degrees: 90 | 180 | 270): Promise<Buffer> {
  const { createCanvas, loadImage } = await import('@napi-rs/canvas')
  const image = await loadImage(png)
  const sideways = degrees !== 180
  const canvas = createCanvas(sideways ? image.height : image.width, sideways ? image.width : image.height)
  const g = canvas.getContext('2d')
  g.translate(canvas.width / 2, canvas.height / 2)
  g.rotate((degrees * Math.PI) / 180)
  g.drawImage(image, -image.width / 2, -image.height / 2)
  return canvas.toBuffer('image/png')
}

/** Each page of a PDF rendered by pdf.js as a PNG at `dpi` (for scans made from typeset text). */
export async function renderPages(pdf: Uint8Array, dpi: number): Promise<Buffer[]> {
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs')
  const task = getDocument({ data: pdf.slice(), disableFontFace: true, useSystemFonts: false, standardFontDataUrl: STANDARD_FONTS, verbosity: 0 })
  const doc = await task.promise
  const images: Buffer[] = []
  try {
    for (let n = 1; n <= doc.numPages; n++) images.push(await renderPage(doc, n, dpi))
  } finally {
    await task.destroy()
  }
  return images
}

/**
 * A scanned lesson: the pages typeset by makePdf, rendered at `dpi` and put back as images, with no text
 * layer; or, with `layer`, with an invisible text layer carrying those strings instead (a broken layer
 * over a right image, as PDFs from some typesetters and OCR tools have). `skew` turns each page image by
 * that many degrees, clockwise, as a page laid askew on the scanner; `turn` by a quarter or half turn, on
 * a page of the turned shape, as a sheet fed sideways or upside down.
 */
export async function makeScannedPdf(
  pages: string[],
  options: { arabic?: boolean; dpi?: number; layer?: string[]; skew?: number; turn?: 90 | 180 | 270 } = {},
): Promise<Uint8Array> {
  let images = await renderPages(await makePdf(pages, { arabic: options.arabic, rtl: options.arabic }), options.dpi ?? 150)
  if (options.skew) images = await Promise.all(images.map((png) => turn(png, options.skew!)))
  if (options.turn) images = await Promise.all(images.map((png) => quarterTurns(png, options.turn!)))
  const landscape = options.turn === 90 || options.turn === 270
  const doc = new PDFDocument({ size: 'A4', margin: 0, autoFirstPage: false, info: { Title: 'Scan', CreationDate: new Date(Date.UTC(2026, 0, 1)) } })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  images.forEach((png, i) => {
    doc.addPage({ size: 'A4', layout: landscape ? 'landscape' : 'portrait', margin: 0 })
    doc.image(png, 0, 0, { width: doc.page.width, height: doc.page.height })
    const layer = options.layer?.[i]
    if (layer) {
      if (options.arabic) {
        registerFonts(doc)
        doc.font(AMIRI)
      }
      doc.fillOpacity(0).fontSize(12).text(layer, 50, 50, { width: doc.page.width - 100, align: options.arabic ? 'right' : 'left' }).fillOpacity(1)
    }
  })
  doc.end()
  await done
  return new Uint8Array(Buffer.concat(chunks))
}
