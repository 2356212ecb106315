// How far a PDF's compressed streams expand, measured before pdf.js reads them. pdf.js inflates a page's
// content stream whole, in memory and without a limit: a 2 MB upload whose one content stream expands to
// 2 GiB took 5 GB of memory and stalled the server for 44 s. Each compressed stream is decoded here chunk
// by chunk through its filters (FlateDecode, LZWDecode, RunLengthDecode, ASCIIHexDecode, ASCII85Decode,
// BrotliDecode, in its /Filter's order) and only counted, and the PDF is refused once the total passes
// the limit.
//
// The file is read as pdf.js reads it, not as a well-behaved typesetter writes it: a name may spell its
// letters as #xx ("/F#6cateDecode"), /F stands for /Filter and /DP for /DecodeParms, a string in a
// dictionary may hold "obj" or ">>", the data starts after the end of the line that "stream" is on (a
// lone CR ends a line), and may hold the bytes "endstream" when its /Length says where it ends. Every
// "stream" keyword is looked at, also inside another stream's data: a /Length cannot hide a stream. A
// stream whose dictionary cannot be read is decoded as its bytes say (a zlib header, hex or ASCII85 text)
// and counted.
//
// An encrypted PDF's streams (a "protected" document, opened by pdf.js with the empty user password)
// are decrypted first, as pdf.js decrypts them (pdf-crypt.ts).
//
// Images are left out of the total when they are what they say: a scan's pages are large once inflated,
// and pdf.js inflates an image only to render it, no further than its size (capped by maxImageSize). A
// stream that says /Subtype /Image but decodes to more than its width, height and colours hold is
// counted like any other: pdf.js reads a stream that a page names as its content whatever it says.

import { CryptError, mayBePlain, standardDecrypter, type Decrypter } from './pdf-crypt.ts'

/** Why a PDF's streams cannot be checked: it is refused before pdf.js reads it. */
export class StreamCheckError extends Error {
  override name = 'StreamCheckError'
}

/** The check was still going at its deadline. */
export class StreamCheckLate extends StreamCheckError {
  override name = 'StreamCheckLate'
}

/** The most that a PDF's compressed streams (images aside) may expand to, together. */
export const MAX_INFLATED_BYTES = 256 * 1024 * 1024

/** The most pixels an image may have (pdf.js's maxImageSize as extract-pdf sets it). */
export const MAX_IMAGE_PIXELS = 16 * 1024 * 1024

// an object header ("12 0 obj") is at most this far before its stream's data
const HEADER_REACH = 64 * 1024
// object headers tried, nearest first, for the one whose dictionary ends at the stream
const HEADER_TRIES = 4
// "endstream"s tried for a stream whose /Length does not say where it ends
const END_TRIES = 8
// "obj"s looked at behind a stream keyword for its header (a file of "obj" words costs no more)
const HEADER_LOOKS = 64
/** The most streams decoded in one PDF: a lesson has hundreds, a 500-page scanned book a few thousand. */
export const MAX_DECODED_STREAMS = 10_000
// the bytes fed to the decoders, at most: the file's streams do not overlap, save a few tried to two ends;
// streams written inside one another, or keywords by the thousand before one far "endstream", would make
// the work grow with their square
const INPUT_PER_FILE_BYTE = 4
const INPUT_ALLOWANCE = 64 * 1024 * 1024
// the image data decoded to check images, at most; past it, images count like other streams
const IMAGE_CHECK_BYTES = 2 * 1024 * 1024 * 1024

type PdfValue = number | string | boolean | null | PdfName | PdfRef | PdfString | PdfValue[] | PdfDict
interface PdfString {
  bytes: Uint8Array
}
interface PdfName {
  name: string
}
interface PdfRef {
  ref: [number, number]
}
interface PdfDict {
  dict: Map<string, PdfValue>
}

const isWhite = (c: number) => c === 0x00 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20
const isDelimiter = (c: number) => c === 0x28 || c === 0x29 || c === 0x3c || c === 0x3e || c === 0x5b || c === 0x5d || c === 0x7b || c === 0x7d || c === 0x2f || c === 0x25

/** A small reader of PDF objects (dictionaries, arrays, names, strings, numbers, references). */
class Lexer {
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
      else if (c === 0x25) while (this.pos < this.end && t[this.pos] !== '\n' && t[this.pos] !== '\r') this.pos++
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
function literalBytes(raw: string): Uint8Array {
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

const asName = (v: PdfValue | undefined): string | undefined => (v && typeof v === 'object' && 'name' in v ? v.name : undefined)
const asNumber = (v: PdfValue | undefined): number | undefined => (typeof v === 'number' ? v : undefined)

const regular = (text: string, p: number) => p >= 0 && p < text.length && !isWhite(text.charCodeAt(p)) && !isDelimiter(text.charCodeAt(p))

interface StreamHead {
  dict: PdfDict
  /** the object's number and generation, from its header */
  num: number
  gen: number
}

/** The dictionary that ends right before the stream keyword at `at`, read from its object header. */
function streamDictionary(text: string, at: number): StreamHead | null {
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
function objectsAt(text: string, [num, gen]: [number, number]): PdfValue[] {
  const found: PdfValue[] = []
  for (const m of text.matchAll(new RegExp(`(?<![\\d])${num}[\\s\\0]+${gen}[\\s\\0]+obj(?![^\\s\\0/<>[\\]()%{}])`, 'g'))) {
    const value = new Lexer(text, m.index + m[0].length, Math.min(text.length, m.index + m[0].length + 65536)).value()
    if (value !== undefined) found.push(value)
    if (found.length >= 8) break
  }
  return found
}

/** A value, its reference followed (the first object of that number that reads as `want` says). */
function resolved(text: string, value: PdfValue | undefined, want: (v: PdfValue) => boolean): PdfValue | undefined {
  if (value && typeof value === 'object' && 'ref' in value) return objectsAt(text, value.ref).find(want)
  return value
}

/** Where the data of the stream whose keyword is at `at` starts: after the end of its line (as pdf.js skips to it). */
function dataStart(text: string, at: number, lineEnds: () => number[]): number {
  if (regular(text, at - 1) || regular(text, at + 6)) return -1
  const ends = lineEnds()
  const i = firstAtOrAfter(ends, at + 6)
  if (i >= ends.length) return -1
  const p = ends[i]!
  return text[p] === '\r' && text[p + 1] === '\n' ? p + 2 : p + 1
}

/** The index of the first of the sorted positions at or after `at`. */
function firstAtOrAfter(sorted: readonly number[], at: number): number {
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
function dataEnds(text: string, start: number, dictionary: PdfDict | null, endstreams: () => number[]): number[] {
  const length = resolved(text, dictionary?.dict.get('Length'), (v) => typeof v === 'number')
  const declared = typeof length === 'number' ? length : undefined
  if (declared !== undefined && Number.isInteger(declared) && declared >= 0 && /^\s*endstream/.test(text.slice(start + declared, start + declared + 32))) return [start + declared]
  // the first "endstream" at or after the start (the file's are found once, in order)
  const all = endstreams()
  const lo = firstAtOrAfter(all, start)
  // the end of line before "endstream" is not data
  return all.slice(lo, lo + END_TRIES).map((e) => (text[e - 1] === '\n' ? (text[e - 2] === '\r' ? e - 2 : e - 1) : text[e - 1] === '\r' ? e - 1 : e))
}

const FILTERS: Record<string, string> = { Fl: 'FlateDecode', LZW: 'LZWDecode', RL: 'RunLengthDecode', AHx: 'ASCIIHexDecode', A85: 'ASCII85Decode' }

interface Filter {
  name: string
  /** LZW's EarlyChange: 1 (the default) widens the codes one code early */
  earlyChange: number
}

/**
 * The stream's filters, in the order they apply: /F, else /Filter, and /DP, else /DecodeParms, as pdf.js
 * reads them (its Dict.get("F", "Filter")), references followed. Null when a filter cannot be read.
 */
function filtersOf(text: string, dictionary: PdfDict): Filter[] | null {
  const d = dictionary.dict
  const isName = (v: PdfValue) => asName(v) !== undefined
  const f = resolved(text, d.get('F') ?? d.get('Filter'), (v) => isName(v) || Array.isArray(v))
  const p = resolved(text, d.get('DP') ?? d.get('DecodeParms'), (v) => Array.isArray(v) || (typeof v === 'object' && v !== null && 'dict' in v))
  const list = Array.isArray(f) ? f.map((x) => resolved(text, x, isName)) : f === undefined || f === null ? [] : [f]
  if (list.some((x) => asName(x) === undefined)) return null
  const names = list.map(asName)
  const params = (Array.isArray(p) ? p : [p]).map((x) => resolved(text, x, (v) => typeof v === 'object' && v !== null && 'dict' in v))
  return names.flatMap((n, i) => {
    if (n === undefined) return []
    const param = params[i]
    const early = param && typeof param === 'object' && 'dict' in param ? asNumber(param.dict.get('EarlyChange')) : undefined
    return [{ name: FILTERS[n] ?? n, earlyChange: early === 0 ? 0 : 1 }]
  })
}

/**
 * Filters to try on a stream whose dictionary or filters could not be read: each that expands data, and
 * the text encodings before Flate. The largest count of them is taken (the check fails closed).
 */
const GUESSES: Filter[][] = [['FlateDecode'], ['LZWDecode'], ['RunLengthDecode'], ['BrotliDecode'], ['ASCIIHexDecode', 'FlateDecode'], ['ASCII85Decode', 'FlateDecode']].map((names) =>
  names.map((name) => ({ name, earlyChange: 1 })),
)

const EXPANDING = new Set(['FlateDecode', 'BrotliDecode', 'LZWDecode', 'RunLengthDecode', 'ASCIIHexDecode', 'ASCII85Decode'])

/** A decoder for one of the filters that expand data; undefined for the others (image codecs, Crypt). */
function decoder(filter: Filter): TransformStream<Uint8Array, Uint8Array> | undefined {
  switch (filter.name) {
    case 'FlateDecode':
      return new DecompressionStream('deflate') as unknown as TransformStream<Uint8Array, Uint8Array>
    case 'BrotliDecode':
      return new DecompressionStream('brotli' as CompressionFormat) as unknown as TransformStream<Uint8Array, Uint8Array>
    case 'LZWDecode':
      return lzw(filter.earlyChange)
    case 'RunLengthDecode':
      return byteDecoder(runLength())
    case 'ASCIIHexDecode':
      return byteDecoder(asciiHex())
    case 'ASCII85Decode':
      return byteDecoder(ascii85())
    default:
      return undefined
  }
}

/** A decoder fed one input byte at a time, writing to `out`; true once its data has ended. */
type ByteDecoder = (byte: number, out: (b: number) => void) => boolean

function byteDecoder(decode: ByteDecoder): TransformStream<Uint8Array, Uint8Array> {
  let ended = false
  return new TransformStream({
    transform(chunk, controller) {
      if (ended) return
      let out = new Uint8Array(65536)
      let n = 0
      const push = (b: number) => {
        out[n++] = b
        if (n === out.length) {
          controller.enqueue(out)
          out = new Uint8Array(65536)
          n = 0
        }
      }
      for (const byte of chunk) if ((ended = decode(byte, push))) break
      if (n > 0) controller.enqueue(out.subarray(0, n))
    },
  })
}

function asciiHex(): ByteDecoder {
  let high = -1
  return (byte, out) => {
    if (byte === 0x3e) return true // ">"
    const d = byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : byte >= 0x41 && byte <= 0x46 ? byte - 0x37 : byte >= 0x61 && byte <= 0x66 ? byte - 0x57 : -1
    if (d < 0) return false
    if (high < 0) high = d
    else {
      out((high << 4) | d)
      high = -1
    }
    return false
  }
}

function ascii85(): ByteDecoder {
  const group: number[] = []
  return (byte, out) => {
    if (byte === 0x7e) {
      // "~>": the last group, short of its five characters
      if (group.length > 1) {
        const n = group.length
        while (group.length < 5) group.push(84)
        const v = group.reduce((acc, d) => acc * 85 + d, 0)
        for (let i = 0; i < n - 1; i++) out((v >>> (24 - 8 * i)) & 0xff)
      }
      return true
    }
    if (byte === 0x7a && group.length === 0) {
      for (let i = 0; i < 4; i++) out(0)
      return false
    }
    if (byte < 0x21 || byte > 0x75) return false
    group.push(byte - 0x21)
    if (group.length === 5) {
      const v = group.reduce((acc, d) => acc * 85 + d, 0)
      for (let i = 0; i < 4; i++) out((v >>> (24 - 8 * i)) & 0xff)
      group.length = 0
    }
    return false
  }
}

function runLength(): ByteDecoder {
  let literal = 0
  let repeat = 0
  return (byte, out) => {
    if (literal > 0) {
      out(byte)
      literal--
    } else if (repeat > 0) {
      for (let i = 0; i < repeat; i++) out(byte)
      repeat = 0
    } else if (byte === 128) return true
    else if (byte < 128) literal = byte + 1
    else repeat = 257 - byte
    return false
  }
}

/**
 * LZW as pdf.js decodes it (LZWStream): 9 to 12-bit codes, 256 clears the table, 257 ends, the code
 * width grows with EarlyChange; a code past the table repeats the sequence before with its first byte
 * again, however long that makes it (a stream of such codes grows with their square).
 */
function lzw(earlyChange: number): TransformStream<Uint8Array, Uint8Array> {
  const values = new Uint8Array(4096)
  const lengths = new Uint16Array(4096)
  const previousCodes = new Uint16Array(4096)
  for (let i = 0; i < 256; i++) {
    values[i] = i
    lengths[i] = 1
  }
  let nextCode = 258
  let codeLength = 9
  let previous = 0
  const sequence = new Uint8Array(4096)
  let sequenceLength = 0
  let bits = 0
  let cached = 0
  let ended = false
  // the output in pieces of 64 KB, written a sequence at a time (bytes past 4096 stay 0, as in pdf.js)
  let out = new Uint8Array(65536)
  let n = 0
  const emit = (controller: TransformStreamDefaultController<Uint8Array>) => {
    for (let k = 0; k < sequenceLength; ) {
      const take = Math.min(sequenceLength - k, out.length - n)
      if (k < 4096) out.set(sequence.subarray(k, Math.min(k + take, 4096)), n)
      n += take
      k += take
      if (n === out.length) {
        controller.enqueue(out)
        out = new Uint8Array(65536)
        n = 0
      }
    }
  }
  const decode = (byte: number, controller: TransformStreamDefaultController<Uint8Array>): boolean => {
    cached = ((cached << 8) | byte) >>> 0
    bits += 8
    while (bits >= codeLength) {
      bits -= codeLength
      const code = (cached >>> bits) & ((1 << codeLength) - 1)
      cached &= (1 << bits) - 1
      const hasPrevious = sequenceLength > 0
      if (code < 256) {
        sequence[0] = code
        sequenceLength = 1
      } else if (code >= 258) {
        if (code < nextCode) {
          sequenceLength = lengths[code]!
          for (let j = sequenceLength - 1, q = code; j >= 0; j--) {
            sequence[j] = values[q] ?? 0
            q = previousCodes[q] ?? 0
          }
        } else {
          sequence[sequenceLength++] = sequence[0] ?? 0
        }
      } else if (code === 256) {
        codeLength = 9
        nextCode = 258
        sequenceLength = 0
        continue
      } else return true
      if (hasPrevious) {
        previousCodes[nextCode] = previous
        lengths[nextCode] = (lengths[previous] ?? 0) + 1
        values[nextCode] = sequence[0] ?? 0
        nextCode++
        const n = nextCode + earlyChange
        codeLength = n & (n - 1) ? codeLength : Math.min(Math.log2(n) + 1, 12) | 0
      }
      previous = code
      // pdf.js's sequence buffer is 4096 bytes; the length counts on past it, its bytes read as 0
      emit(controller)
    }
    return false
  }
  return new TransformStream({
    transform(chunk, controller) {
      if (ended) return
      for (const byte of chunk) if ((ended = decode(byte, controller))) break
      if (n > 0) {
        controller.enqueue(out.slice(0, n))
        n = 0
      }
    },
  })
}

/**
 * The size of a zlib stream as pdf.js's own decoder reads it (FlateStream, which pdf.js falls back to
 * when the platform's refuses the data): no check that a match reaches back only into the output, an
 * empty stored block with a zero NLEN taken, a bad code the end. Only the size is counted.
 */
function lenientInflateSize(data: Uint8Array, cap: number): number {
  if (data.length < 2 || (data[0]! & 0x0f) !== 8 || ((data[0]! << 8) + data[1]!) % 31 !== 0 || data[1]! & 0x20) return 0
  let at = 2
  let buffer = 0
  let size = 0
  let total = 0
  const bits = (n: number): number => {
    while (size < n) {
      if (at >= data.length) throw new Error('end')
      buffer |= data[at++]! << size
      size += 8
    }
    const v = buffer & ((1 << n) - 1)
    buffer >>>= n
    size -= n
    return v
  }
  const table = (lengths: ArrayLike<number>): [Int32Array, number] => {
    let maxLen = 0
    for (let i = 0; i < lengths.length; i++) maxLen = Math.max(maxLen, lengths[i]!)
    const codes = new Int32Array(1 << maxLen)
    for (let len = 1, code = 0, skip = 2; len <= maxLen; ++len, code <<= 1, skip <<= 1)
      for (let val = 0; val < lengths.length; ++val)
        if (lengths[val] === len) {
          let reversed = 0
          for (let i = 0, t = code; i < len; ++i, t >>= 1) reversed = (reversed << 1) | (t & 1)
          for (let i = reversed; i < codes.length; i += skip) codes[i] = (len << 16) | val
          ++code
        }
    return [codes, maxLen]
  }
  const symbol = ([codes, maxLen]: [Int32Array, number]): number => {
    while (size < maxLen && at < data.length) {
      buffer |= data[at++]! << size
      size += 8
    }
    const code = codes[buffer & ((1 << maxLen) - 1)]!
    const len = code >> 16
    if (len < 1 || size < len) throw new Error('bad code')
    buffer >>>= len
    size -= len
    return code & 0xffff
  }
  const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258, 258, 258]
  const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0, 0, 0]
  const DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
  const fixedLit = table(Array.from({ length: 288 }, (_, i) => (i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8)))
  const fixedDist = table(Array.from({ length: 32 }, (_, i) => (i < 30 ? 5 : 0)))
  const ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
  try {
    for (let last = false; !last && total <= cap; ) {
      const header = bits(3)
      last = (header & 1) === 1
      const type = header >> 1
      if (type === 0) {
        buffer = 0
        size = 0
        if (at + 4 > data.length) break
        const len = data[at]! | (data[at + 1]! << 8)
        const check = data[at + 2]! | (data[at + 3]! << 8)
        at += 4
        if (check !== (~len & 0xffff) && (len !== 0 || check !== 0)) break
        total += Math.min(len, data.length - at)
        at += len
        if (at >= data.length) break
        continue
      }
      let lit: [Int32Array, number]
      let dist: [Int32Array, number]
      if (type === 1) [lit, dist] = [fixedLit, fixedDist]
      else if (type === 2) {
        const numLit = bits(5) + 257
        const numDist = bits(5) + 1
        const numCodeLen = bits(4) + 4
        const codeLenLengths = new Uint8Array(19)
        for (let i = 0; i < numCodeLen; i++) codeLenLengths[ORDER[i]!] = bits(3)
        const codeLenTable = table(codeLenLengths)
        const lengths = new Uint8Array(numLit + numDist)
        for (let i = 0, len = 0; i < lengths.length; ) {
          const code = symbol(codeLenTable)
          if (code < 16) {
            lengths[i++] = len = code
            continue
          }
          const [extra, base, what] = code === 16 ? [2, 3, len] : code === 17 ? [3, 3, (len = 0)] : [7, 11, (len = 0)]
          const repeat = bits(extra) + base
          lengths.fill(what, i, i + repeat)
          i += repeat
        }
        lit = table(lengths.subarray(0, numLit))
        dist = table(lengths.subarray(numLit))
      } else break
      for (;;) {
        const code = symbol(lit)
        if (code < 256) {
          total++
          continue
        }
        if (code === 256) break
        const index = code - 257
        total += (LENGTH_BASE[index] ?? 0) + (LENGTH_EXTRA[index] ? bits(LENGTH_EXTRA[index]!) : 0)
        const d = symbol(dist)
        if (DIST_EXTRA[d]) bits(DIST_EXTRA[d]!)
        if (total > cap) break
      }
    }
  } catch {
    // pdf.js ends the stream at a bad code or the end of the data: what was read counts
  }
  return total
}

/** The size of the data once decoded by the filters (up to the first that does not expand data), past `cap` not counted. */
async function decodedSize(data: Uint8Array, filters: readonly Filter[], cap: number): Promise<{ size: number; clean: boolean }> {
  // the data in pieces, each copied as it is read (no copy of the whole, and no decoder holds the file)
  let offset = 0
  let readable = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= data.length) return controller.close()
      const end = Math.min(data.length, offset + 65536)
      controller.enqueue(data.slice(offset, end))
      offset = end
    },
  })
  let decoding = false
  for (const f of filters) {
    // a Crypt filter is the security handler's (the data comes here decrypted): the next filter applies
    if (f.name === 'Crypt') continue
    const d = decoder(f)
    if (!d) break
    readable = readable.pipeThrough(d)
    decoding = true
  }
  if (!decoding) return { size: 0, clean: true }
  const reader = readable.getReader()
  let size = 0
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return { size, clean: true }
      size += value.byteLength
      if (size > cap) {
        await reader.cancel().catch(() => {})
        return { size, clean: true }
      }
    }
  } catch {
    // corrupt or cut short. pdf.js then decodes Flate with its own, lenient decoder: counted as it reads
    // it when Flate comes first; behind another filter, or followed by one, the most it could give
    const chain = filters.filter((f) => f.name !== 'Crypt')
    const flate = chain.findIndex((f) => f.name === 'FlateDecode')
    if (flate === -1) return { size, clean: false }
    const expanding = chain.filter((f) => EXPANDING.has(f.name)).length
    if (flate === 0 && expanding === 1) return { size: Math.max(size, lenientInflateSize(data, cap)), clean: false }
    return { size: Math.max(size, Math.min(cap + 1, data.length * 1032 ** (expanding - flate))), clean: false }
  }
}

/** What an image says it holds, in bytes (rows padded to a byte, a predictor's tag byte a row), or null when it is no plausible image. */
function imageBytes(dictionary: PdfDict): number | null {
  const d = dictionary.dict
  if (asName(d.get('Subtype')) !== 'Image') return null
  const width = asNumber(d.get('Width'))
  const height = asNumber(d.get('Height'))
  if (!width || !height || width < 1 || height < 1 || width * height > MAX_IMAGE_PIXELS) return null
  const mask = d.get('ImageMask') === true
  const bpc = mask ? 1 : (asNumber(d.get('BitsPerComponent')) ?? 8)
  const space = d.get('ColorSpace')
  const named = asName(space) ?? (Array.isArray(space) ? asName(space[0]) : undefined)
  const components = mask || named === 'DeviceGray' || named === 'CalGray' || named === 'Indexed' || named === 'Separation' ? 1 : named === 'DeviceRGB' || named === 'CalRGB' || named === 'Lab' ? 3 : 4
  return Math.ceil((width * components * Math.min(bpc, 16)) / 8 + 1) * height + 4096
}

/**
 * How the document's streams may be decrypted: empty when it is not encrypted. Every /Encrypt of its
 * trailers and cross-reference streams, and every object its reference may name (a decoy in a comment,
 * or an unused stream's, as well as the one pdf.js follows): the check counts each stream the largest
 * way. CryptError's reason when none opens with the empty password.
 */
function decryptersOf(text: string, heads: Iterable<StreamHead | null>): Decrypter[] {
  const found: { encrypt: PdfValue; id: PdfValue | undefined }[] = []
  const look = (dict: PdfDict) => {
    const encrypt = dict.dict.get('Encrypt')
    if (encrypt !== undefined && encrypt !== null) found.push({ encrypt, id: dict.dict.get('ID') })
  }
  for (let at = text.indexOf('trailer'); at !== -1 && found.length < 16; at = text.indexOf('trailer', at + 7)) {
    if (regular(text, at - 1) || regular(text, at + 7)) continue
    const value = new Lexer(text, at + 7, Math.min(text.length, at + 65536)).value()
    if (value && typeof value === 'object' && 'dict' in value) look(value)
  }
  for (const head of heads) if (head && asName(head.dict.dict.get('Type')) === 'XRef' && found.length < 32) look(head.dict)
  if (found.length === 0) return []
  const decrypters: Decrypter[] = []
  let refusal: string | undefined
  for (const { encrypt, id } of found) {
    const first = Array.isArray(id) ? id[0] : undefined
    const idBytes = first && typeof first === 'object' && 'bytes' in first ? first.bytes : new Uint8Array(0)
    const dicts = encrypt && typeof encrypt === 'object' && 'ref' in encrypt ? objectsAt(text, encrypt.ref) : [encrypt]
    for (const dict of dicts) {
      if (!dict || typeof dict !== 'object' || !('dict' in dict)) continue
      try {
        decrypters.push(standardDecrypter(dict.dict as Map<string, unknown>, idBytes))
      } catch (err) {
        if (!(err instanceof CryptError)) throw err
        refusal ??= err.message
      }
    }
  }
  if (decrypters.length === 0) throw new StreamCheckError(refusal ?? 'the PDF is encrypted, and its /Encrypt dictionary cannot be read')
  return decrypters
}

/**
 * The total size of the PDF's compressed streams once decoded (images that are what they say aside),
 * counted up to `limit` (the count stops a little past it). A stream that does not decode cleanly counts
 * what it gave: pdf.js judges it. StreamCheckError for a PDF with more than MAX_DECODED_STREAMS streams to
 * decode, or whose streams would make the decoders read more than four times its size (streams inside
 * streams), or whose check is still going at `deadlineAt` (a time in ms, as Date.now()), or whose
 * encryption cannot be undone with the empty password.
 */
export async function inflatedSize(bytes: Uint8Array, limit = MAX_INFLATED_BYTES, deadlineAt = Number.POSITIVE_INFINITY): Promise<number> {
  return (await streamCheck(bytes, limit, deadlineAt)).inflated
}

/** The pixels an image stream says it has (width × height), or 0 for a stream that is no image. */
function imagePixels(dictionary: PdfDict | null): number {
  if (!dictionary || asName(dictionary.dict.get('Subtype')) !== 'Image') return 0
  const width = asNumber(dictionary.dict.get('Width')) ?? 0
  const height = asNumber(dictionary.dict.get('Height')) ?? 0
  return width > 0 && height > 0 ? width * height : 0
}

/**
 * inflatedSize, and the largest image the PDF holds, in pixels: pdf.js leaves an image past its
 * maxImageSize out of a page's operators, so that a scan at 600 dpi (35 million pixels) would look like
 * a page with nothing on it.
 */
export async function streamCheck(bytes: Uint8Array, limit = MAX_INFLATED_BYTES, deadlineAt = Number.POSITIVE_INFINITY): Promise<{ inflated: number; largestImagePixels: number }> {
  // one byte, one character: positions in the text are positions in the bytes
  const text = new TextDecoder('latin1').decode(bytes)
  let lines: number[] | undefined
  const lineEnds = () => (lines ??= [...text.matchAll(/[\r\n]/g)].map((m) => m.index))
  let endstreams: number[] | undefined
  const endstreamIndex = () => (endstreams ??= [...text.matchAll(/endstream/g)].map((m) => m.index))
  let total = 0
  let decoded = 0
  let input = 0
  let imageChecked = 0
  const inputBudget = INPUT_PER_FILE_BYTE * bytes.length + INPUT_ALLOWANCE
  // the streams' keywords and dictionaries first (each keyword's data start and dictionary, by its
  // position): a cross-reference stream may say the file is encrypted
  const heads = new Map<number, { start: number; head: StreamHead | null }>()
  for (let at = text.indexOf('stream'); at !== -1; at = text.indexOf('stream', at + 6)) {
    const start = dataStart(text, at, lineEnds)
    if (start !== -1) heads.set(at, { start, head: streamDictionary(text, at) })
    if (Date.now() > deadlineAt) throw new StreamCheckLate('checking its compressed streams took longer than the extraction\'s deadline')
  }
  const decrypters = decryptersOf(text, [...heads.values()].map((h) => h.head))
  let largestImagePixels = 0
  for (const { head } of heads.values()) largestImagePixels = Math.max(largestImagePixels, imagePixels(head?.dict ?? null))
  for (const { start, head } of heads.values()) {
    if (total > limit) break
    const dictionary = head?.dict ?? null
    // an encrypted stream whose object cannot be told cannot be decrypted: such a file is not checked
    if (decrypters.length > 0 && !head) throw new StreamCheckError('the PDF is encrypted, and a stream\'s dictionary cannot be read')
    const ends = dataEnds(text, start, dictionary, endstreamIndex)
    if (ends.length === 0) break
    // filters read, else every guess (the largest count is taken)
    const read = dictionary ? filtersOf(text, dictionary) : null
    const readings = read ?? GUESSES
    if (readings.length > 0 && ++decoded > MAX_DECODED_STREAMS) throw new StreamCheckError(`the PDF has more than ${MAX_DECODED_STREAMS} compressed streams to check`)
    if (Date.now() > deadlineAt) throw new StreamCheckLate('checking its compressed streams took longer than the extraction\'s deadline')
    // the data as each decrypter gives it, and as written when the handler may leave it (a cross-reference
    // stream, metadata, a Crypt filter): the check does not judge which pdf.js will take
    const forms = (data: Uint8Array): Uint8Array[] => {
      if (decrypters.length === 0 || !head) return [data]
      const out = decrypters.map((d) => d(head.num, head.gen, data))
      return mayBePlain(head.dict.dict as Map<string, unknown>) ? [...out, data] : out
    }
    const image = read && dictionary && imageChecked <= IMAGE_CHECK_BYTES ? imageBytes(dictionary) : null
    const cap = Math.max(limit - total, image ?? 0) + 1
    let size = 0
    for (const filters of read ? [read] : GUESSES) {
      if (filters.length === 0) continue
      // the first end where the data decodes cleanly (data may hold "endstream"), else the largest count
      for (const e of ends) {
        const data = bytes.subarray(start, e)
        let clean = true
        for (const form of forms(data)) {
          if ((input += e - start) > inputBudget) throw new StreamCheckError('the PDF\'s streams are written inside one another: they cannot be checked')
          const counted = await decodedSize(form, filters, cap)
          size = Math.max(size, counted.size)
          clean &&= counted.clean
        }
        if (clean) break
      }
    }
    if (image === null || size > image) total += size
    else imageChecked += size
  }
  return { inflated: total, largestImagePixels }
}
