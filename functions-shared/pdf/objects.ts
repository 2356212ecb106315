// A small reader of the objects of a PDF file as pdf.js reads them (dictionaries, arrays, names, strings,
// numbers, references), and of where a stream's dictionary and data are.

// an object header ("12 0 obj") is at most this far before its stream's data
const HEADER_REACH = 64 * 1024
// object headers tried, nearest first, for the one whose dictionary ends at the stream
const HEADER_TRIES = 4
// "endstream"s tried for a stream whose /Length does not say where it ends
const END_TRIES = 8
// "obj"s looked at behind a stream keyword for its header (a file of "obj" words costs no more)
const HEADER_LOOKS = 64

export type PdfValue = number | string | boolean | null | PdfName | PdfRef | PdfString | PdfValue[] | PdfDict
export interface PdfString {
  bytes: Uint8Array
}
export interface PdfName {
  name: string
}
export interface PdfRef {
  ref: [number, number]
}
export interface PdfDict {
  dict: Map<string, PdfValue>
}

export const isWhite = (c: number) => c === 0x00 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20
export const isDelimiter = (c: number) =>
  c === 0x28 || c === 0x29 || c === 0x3c || c === 0x3e || c === 0x5b || c === 0x5d || c === 0x7b || c === 0x7d || c === 0x2f || c === 0x25

/** A small reader of PDF objects (dictionaries, arrays, names, strings, numbers, references). */
export class Lexer {
  pos: number
  private readonly text: string
  private readonly end: number
  constructor(text: string, start: number, end: number) {
    this.text = text
    this.pos = start
    this.end = end
  }

  skipSpace(): void {
    const t = this.text
    while (this.pos < this.end) {
      const c = t.charCodeAt(this.pos)
      if (isWhite(c)) this.pos++
      else if (c === 0x25) { while (this.pos < this.end && t[this.pos] !== '\n' && t[this.pos] !== '\r') this.pos++ }
      else break
    }
  }

  /** The next object, or undefined when the text there is none. */
  value(depth = 0): PdfValue | undefined {
    if (depth > 512) return undefined
    this.skipSpace()
    const t = this.text
    if (this.pos >= this.end) return undefined
    const c = t[this.pos]!
    if (t.startsWith('<<', this.pos)) {
      this.pos += 2
      const dict = new Map<string, PdfValue>()
      for (;;) {
        this.skipSpace()
        if (t.startsWith('>>', this.pos)) {
          this.pos += 2
          return { dict }
        }
        const key = this.value(depth + 1)
        if (!key || typeof key !== 'object' || !('name' in key)) return undefined
        const value = this.value(depth + 1)
        if (value === undefined) return undefined
        dict.set(key.name, value)
      }
    }
    if (c === '[') {
      this.pos++
      const items: PdfValue[] = []
      for (;;) {
        this.skipSpace()
        if (t[this.pos] === ']') {
          this.pos++
          return items
        }
        const item = this.value(depth + 1)
        if (item === undefined) return undefined
        items.push(item)
      }
    }
    if (c === '/') {
      let p = this.pos + 1
      while (p < this.end && !isWhite(t.charCodeAt(p)) && !isDelimiter(t.charCodeAt(p))) p++
      const raw = t.slice(this.pos + 1, p)
      this.pos = p
      // "#6c" is the letter l, as pdf.js reads it
      return { name: raw.replace(/#([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))) }
    }
    if (c === '(') {
      let nesting = 0
      for (let p = this.pos; p < this.end; p++) {
        const ch = t[p]
        if (ch === '\\') p++
        else if (ch === '(') nesting++
        else if (ch === ')' && --nesting === 0) {
          const raw = t.slice(this.pos + 1, p)
          this.pos = p + 1
          return { bytes: literalBytes(raw) }
        }
      }
      return undefined
    }
    if (c === '<') {
      const close = t.indexOf('>', this.pos)
      if (close === -1 || close >= this.end) return undefined
      const hex = t.slice(this.pos + 1, close).replace(/[^0-9a-fA-F]/g, '')
      this.pos = close + 1
      const padded = hex.length % 2 === 1 ? `${hex}0` : hex
      return { bytes: Uint8Array.from(padded.match(/../g) ?? [], (h) => parseInt(h, 16)) }
    }
    // a number, a reference ("5 0 R") or a keyword (true, false, null)
    let p = this.pos
    while (p < this.end && !isWhite(t.charCodeAt(p)) && !isDelimiter(t.charCodeAt(p))) p++
    const token = t.slice(this.pos, p)
    if (token === '') return undefined
    this.pos = p
    if (token === 'true' || token === 'false') return token === 'true'
    if (token === 'null') return null
    const n = Number(token)
    if (!Number.isFinite(n)) return undefined
    if (Number.isInteger(n) && n >= 0) {
      const save = this.pos
      const m = /^[\s\0]+(\d+)[\s\0]+R(?![^\s\0/<>[\]()%{}])/.exec(t.slice(this.pos, Math.min(this.end, this.pos + 32)))
      if (m) {
        this.pos += m[0].length
        return { ref: [n, Number(m[1])] }
      }
      this.pos = save
    }
    return n
  }
}

/** A literal string's bytes, its escapes read (\n, \ddd, a backslash before an end of line). */
export function literalBytes(raw: string): Uint8Array {
  const out: number[] = []
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i)
    if (ch !== 0x5c) {
      out.push(ch & 0xff)
      continue
    }
    const next = raw[++i]
    if (next === undefined) break
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, b: 8, f: 12, '(': 40, ')': 41, '\\': 92 }
    if (next in simple) out.push(simple[next]!)
    else if (next >= '0' && next <= '7') {
      let octal = next
      while (octal.length < 3 && raw[i + 1]! >= '0' && raw[i + 1]! <= '7') octal += raw[++i]
      out.push(parseInt(octal, 8) & 0xff)
    } else if (next === '\r') {
      if (raw[i + 1] === '\n') i++
    } else if (next !== '\n') out.push(next.charCodeAt(0) & 0xff)
  }
  return Uint8Array.from(out)
}

export const asName = (v: PdfValue | undefined): string | undefined => (v && typeof v === 'object' && 'name' in v ? v.name : undefined)
export const asNumber = (v: PdfValue | undefined): number | undefined => (typeof v === 'number' ? v : undefined)

export const regular = (text: string, p: number) => p >= 0 && p < text.length && !isWhite(text.charCodeAt(p)) && !isDelimiter(text.charCodeAt(p))

export interface StreamHead {
  dict: PdfDict
  /** the object's number and generation, from its header */
  num: number
  gen: number
}

/** The dictionary that ends right before the stream keyword at `at`, read from its object header. */
export function streamDictionary(text: string, at: number): StreamHead | null {
  // the nearest "N G obj" first: one inside a string or a comment of the dictionary does not end at the stream
  // searched in the window before the keyword only: a search to the file's start for each keyword of a
  // file without headers would grow with the square of its size
  const from = Math.max(0, at - HEADER_REACH)
  const window = text.slice(from, at)
  let w = window.length
  for (let tries = 0, looks = 0; tries < HEADER_TRIES && looks < HEADER_LOOKS; looks++) {
    w = w > 0 ? window.lastIndexOf('obj', w - 1) : -1
    if (w === -1) break
    const p = from + w
    const header = regular(text, p - 1) || regular(text, p + 3) ? null : /(\d+)\s+(\d+)\s+$/.exec(text.slice(Math.max(0, p - 32), p))
    if (!header) continue
    tries++
    const lexer = new Lexer(text, p + 3, at)
    const value = lexer.value()
    lexer.skipSpace()
    if (value && typeof value === 'object' && 'dict' in value && lexer.pos === at) return { dict: value, num: Number(header[1]), gen: Number(header[2]) }
  }
  return null
}

/** Every object "num gen obj" of the file, read (a comment, white space or a decoy before the real one: all of them). */
export function objectsAt(text: string, [num, gen]: [number, number]): PdfValue[] {
  const found: PdfValue[] = []
  for (const m of text.matchAll(new RegExp(`(?<![\\d])${num}[\\s\\0]+${gen}[\\s\\0]+obj(?![^\\s\\0/<>[\\]()%{}])`, 'g'))) {
    const value = new Lexer(text, m.index + m[0].length, Math.min(text.length, m.index + m[0].length + 65536)).value()
    if (value !== undefined) found.push(value)
    if (found.length >= 8) break
  }
  return found
}

/** A value, its reference followed (the first object of that number that reads as `want` says). */
export function resolved(text: string, value: PdfValue | undefined, want: (v: PdfValue) => boolean): PdfValue | undefined {
  if (value && typeof value === 'object' && 'ref' in value) return objectsAt(text, value.ref).find(want)
  return value
}

/** Where the data of the stream whose keyword is at `at` starts: after the end of its line (as pdf.js skips to it). */
export function dataStart(text: string, at: number, lineEnds: () => number[]): number {
  if (regular(text, at - 1) || regular(text, at + 6)) return -1
  const ends = lineEnds()
  const i = firstAtOrAfter(ends, at + 6)
  if (i >= ends.length) return -1
  const p = ends[i]!
  return text[p] === '\r' && text[p + 1] === '\n' ? p + 2 : p + 1
}

/** The index of the first of the sorted positions at or after `at`. */
export function firstAtOrAfter(sorted: readonly number[], at: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! < at) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The possible ends of a stream's data: where its /Length says, else before each "endstream" after it. */
export function dataEnds(text: string, start: number, dictionary: PdfDict | null, endstreams: () => number[]): number[] {
  const length = resolved(text, dictionary?.dict.get('Length'), (v) => typeof v === 'number')
  const declared = typeof length === 'number' ? length : undefined
  if (declared !== undefined && Number.isInteger(declared) && declared >= 0 && /^\s*endstream/.test(text.slice(start + declared, start + declared + 32))) {
    return [start + declared]
  }
  // the first "endstream" at or after the start (the file's are found once, in order)
  const all = endstreams()
  const lo = firstAtOrAfter(all, start)
  // the end of line before "endstream" is not data
  return all.slice(lo, lo + END_TRIES).map((e) => (text[e - 1] === '\n' ? (text[e - 2] === '\r' ? e - 2 : e - 1) : text[e - 1] === '\r' ? e - 1 : e))
}
