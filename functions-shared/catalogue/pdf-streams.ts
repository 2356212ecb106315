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

import { CryptError, standardDecrypter, type Decrypter } from './pdf-crypt.ts'

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
    if (depth > 32) return undefined
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
      const m = /^\s+(\d+)\s+R(?![^\s/<>[\]()%{}])/.exec(t.slice(this.pos, Math.min(this.end, this.pos + 32)))
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

/** The integer objects of the file ("7 0 obj 1234 endobj"), for a /Length given by reference. */
function integerObjects(text: string): Map<string, number> {
  const found = new Map<string, number>()
  for (const m of text.matchAll(/(?<![\d])(\d+)\s+(\d+)\s+obj\s+(\d+)\s+endobj/g)) found.set(`${m[1]} ${m[2]}`, Number(m[3]))
  return found
}

/** Where the data of the stream whose keyword is at `at` starts: after the end of its line (as pdf.js skips to it). */
function dataStart(text: string, at: number): number {
  if (regular(text, at - 1) || regular(text, at + 6)) return -1
  for (let p = at + 6; p < Math.min(text.length, at + 1024); p++) {
    if (text[p] === '\r') return text[p + 1] === '\n' ? p + 2 : p + 1
    if (text[p] === '\n') return p + 1
  }
  return -1
}

/** The possible ends of a stream's data: where its /Length says, else before each "endstream" after it. */
function dataEnds(text: string, start: number, dictionary: PdfDict | null, integers: () => Map<string, number>, endstreams: () => number[]): number[] {
  const length = dictionary?.dict.get('Length')
  const declared = typeof length === 'number' ? length : length && typeof length === 'object' && 'ref' in length ? integers().get(length.ref.join(' ')) : undefined
  if (declared !== undefined && Number.isInteger(declared) && declared >= 0 && /^\s*endstream/.test(text.slice(start + declared, start + declared + 32))) return [start + declared]
  // the first "endstream" at or after the start (the file's are found once, in order)
  const all = endstreams()
  let lo = 0
  let hi = all.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (all[mid]! < start) lo = mid + 1
    else hi = mid
  }
  // the end of line before "endstream" is not data
  return all.slice(lo, lo + END_TRIES).map((e) => (text[e - 1] === '\n' ? (text[e - 2] === '\r' ? e - 2 : e - 1) : text[e - 1] === '\r' ? e - 1 : e))
}

const FILTERS: Record<string, string> = { Fl: 'FlateDecode', LZW: 'LZWDecode', RL: 'RunLengthDecode', AHx: 'ASCIIHexDecode', A85: 'ASCII85Decode' }

interface Filter {
  name: string
  /** LZW's EarlyChange: 1 (the default) widens the codes one code early */
  earlyChange: number
}

/** The stream's filters, in the order they apply (/Filter or /F, their /DecodeParms or /DP). */
function filtersOf(dictionary: PdfDict): Filter[] {
  const d = dictionary.dict
  const f = d.get('Filter') ?? d.get('F')
  const p = d.get('DecodeParms') ?? d.get('DP')
  const names = Array.isArray(f) ? f.map(asName) : [asName(f)]
  const params = Array.isArray(p) ? p : [p]
  return names.flatMap((n, i) => {
    if (n === undefined) return []
    const param = params[i]
    const early = param && typeof param === 'object' && 'dict' in param ? asNumber(param.dict.get('EarlyChange')) : undefined
    return [{ name: FILTERS[n] ?? n, earlyChange: early === 0 ? 0 : 1 }]
  })
}

/** Filters guessed from the data itself, for a stream whose dictionary could not be read. */
function guessFilters(data: Uint8Array): Filter[] {
  const head = new TextDecoder('latin1').decode(data.subarray(0, 64)).trimStart()
  const zlib = (a: number, b: number) => (a & 0x0f) === 8 && ((a << 8) | b) % 31 === 0
  const named = (...names: string[]) => names.map((name) => ({ name, earlyChange: 1 }))
  if (data.length >= 2 && zlib(data[0]!, data[1]!)) return named('FlateDecode')
  if (/^[0-9a-fA-F\s]+(>|$)/.test(head)) return named('ASCIIHexDecode', 'FlateDecode')
  if (/^[!-uz\s]+(~>|$)/.test(head)) return named('ASCII85Decode', 'FlateDecode')
  return []
}

/** A decoder for one of the filters that expand data; undefined for the others (image codecs, Crypt). */
function decoder(filter: Filter): TransformStream<Uint8Array, Uint8Array> | undefined {
  switch (filter.name) {
    case 'FlateDecode':
      return new DecompressionStream('deflate') as unknown as TransformStream<Uint8Array, Uint8Array>
    case 'BrotliDecode':
      return new DecompressionStream('brotli' as CompressionFormat) as unknown as TransformStream<Uint8Array, Uint8Array>
    case 'LZWDecode':
      return byteDecoder(lzw(filter.earlyChange))
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
      const out: number[] = []
      const push = (b: number) => {
        out.push(b)
        if (out.length >= 65536) controller.enqueue(Uint8Array.from(out.splice(0)))
      }
      for (const byte of chunk) if ((ended = decode(byte, push))) break
      if (out.length > 0) controller.enqueue(Uint8Array.from(out))
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

/** LZW as PDF writes it: 9 to 12-bit codes, 256 clears the table, 257 ends; with EarlyChange 1 the code width grows one code early. */
function lzw(earlyChange: number): ByteDecoder {
  const prefix = new Int32Array(4096)
  const suffix = new Uint8Array(4096)
  const length = new Uint16Array(4096)
  for (let i = 0; i < 256; i++) {
    suffix[i] = i
    length[i] = 1
  }
  let next = 258
  let width = 9
  let previous = -1
  let bits = 0
  let buffer = 0
  const stack = new Uint8Array(4096)
  const emit = (code: number, out: (b: number) => void) => {
    const n = length[code]!
    for (let c = code, k = 0; k < n; c = prefix[c]!, k++) stack[k] = suffix[c]!
    for (let i = n - 1; i >= 0; i--) out(stack[i]!)
  }
  const first = (code: number) => {
    let c = code
    while (length[c]! > 1) c = prefix[c]!
    return suffix[c]!
  }
  return (byte, out) => {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= width) {
      const code = (buffer >>> (bits - width)) & ((1 << width) - 1)
      bits -= width
      buffer &= (1 << bits) - 1
      if (code === 257) return true
      if (code === 256) {
        next = 258
        width = 9
        previous = -1
        continue
      }
      if (previous === -1) {
        if (code > 255) return true
        out(code)
        previous = code
        continue
      }
      if (code > next) return true // not LZW: what it gave counts
      if (next < 4096) {
        prefix[next] = previous
        suffix[next] = code === next ? first(previous) : first(code)
        length[next] = Math.min(length[previous]! + 1, 4095)
        next++
      }
      emit(code, out)
      previous = code
      if (next + earlyChange >= 1 << width && width < 12) width++
    }
    return false
  }
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
    // corrupt or cut short: what it gave counts
    return { size, clean: false }
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

/** The object "num gen obj" of the file, read. */
function objectAt(text: string, [num, gen]: [number, number]): PdfValue | undefined {
  for (const m of text.matchAll(new RegExp(`(?<![\\d])${num}\\s+${gen}\\s+obj(?![^\\s/<>[\\]()%{}])`, 'g'))) {
    const value = new Lexer(text, m.index + m[0].length, text.length).value()
    if (value !== undefined) return value
  }
  return undefined
}

/**
 * How the document's streams are decrypted: null when it is not encrypted. The /Encrypt and /ID of its
 * trailers and cross-reference streams (the last that names them), as pdf.js reads them.
 */
function decrypterOf(text: string, heads: Iterable<StreamHead | null>): Decrypter | null {
  let found: { encrypt: PdfValue; id: PdfValue | undefined } | null = null
  const look = (dict: PdfDict) => {
    const encrypt = dict.dict.get('Encrypt')
    if (encrypt !== undefined && encrypt !== null) found = { encrypt, id: dict.dict.get('ID') }
  }
  for (let at = text.indexOf('trailer'); at !== -1; at = text.indexOf('trailer', at + 7)) {
    if (regular(text, at - 1) || regular(text, at + 7)) continue
    const value = new Lexer(text, at + 7, Math.min(text.length, at + 65536)).value()
    if (value && typeof value === 'object' && 'dict' in value) look(value)
  }
  for (const head of heads) if (head && asName(head.dict.dict.get('Type')) === 'XRef') look(head.dict)
  if (!found) return null
  const { encrypt, id } = found as { encrypt: PdfValue; id: PdfValue | undefined }
  const dict = encrypt && typeof encrypt === 'object' && 'ref' in encrypt ? objectAt(text, encrypt.ref) : encrypt
  if (!dict || typeof dict !== 'object' || !('dict' in dict)) throw new StreamCheckError('the PDF is encrypted, and its /Encrypt dictionary cannot be read')
  const first = Array.isArray(id) ? id[0] : undefined
  const idBytes = first && typeof first === 'object' && 'bytes' in first ? first.bytes : new Uint8Array(0)
  try {
    return standardDecrypter(dict.dict as Map<string, unknown>, idBytes)
  } catch (err) {
    if (err instanceof CryptError) throw new StreamCheckError(err.message)
    throw err
  }
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
  // one byte, one character: positions in the text are positions in the bytes
  const text = new TextDecoder('latin1').decode(bytes)
  let integers: Map<string, number> | undefined
  const integerIndex = () => (integers ??= integerObjects(text))
  let endstreams: number[] | undefined
  const endstreamIndex = () => (endstreams ??= [...text.matchAll(/endstream/g)].map((m) => m.index))
  let total = 0
  let decoded = 0
  let input = 0
  let imageChecked = 0
  const inputBudget = INPUT_PER_FILE_BYTE * bytes.length + INPUT_ALLOWANCE
  // the streams' keywords and dictionaries first: a cross-reference stream may say the file is encrypted
  const heads = new Map<number, StreamHead | null>()
  for (let at = text.indexOf('stream'); at !== -1; at = text.indexOf('stream', at + 6)) {
    if (dataStart(text, at) !== -1) heads.set(at, streamDictionary(text, at))
    if (Date.now() > deadlineAt) throw new StreamCheckLate('checking its compressed streams took longer than the extraction\'s deadline')
  }
  const decrypt = decrypterOf(text, heads.values())
  for (const [at, head] of heads) {
    if (total > limit) break
    const start = dataStart(text, at)
    const dictionary = head?.dict ?? null
    const ends = dataEnds(text, start, dictionary, integerIndex, endstreamIndex)
    if (ends.length === 0) break
    const filters = dictionary ? filtersOf(dictionary) : guessFilters(bytes.subarray(start, ends[0]))
    const plain = (data: Uint8Array) => (decrypt && head ? decrypt(head.num, head.gen, data, head.dict.dict as Map<string, unknown>) : data)
    const image = dictionary && imageChecked <= IMAGE_CHECK_BYTES ? imageBytes(dictionary) : null
    if (filters.length > 0 && ++decoded > MAX_DECODED_STREAMS) throw new StreamCheckError(`the PDF has more than ${MAX_DECODED_STREAMS} compressed streams to check`)
    if (Date.now() > deadlineAt) throw new StreamCheckLate('checking its compressed streams took longer than the extraction\'s deadline')
    const cap = Math.max(limit - total, image ?? 0) + 1
    // the first end where the data decodes cleanly (data may hold "endstream"), else the largest count
    let size = 0
    for (const e of ends) {
      if (filters.length > 0 && (input += e - start) > inputBudget) throw new StreamCheckError('the PDF\'s streams are written inside one another: they cannot be checked')
      const counted = await decodedSize(filters.length > 0 ? plain(bytes.subarray(start, e)) : bytes.subarray(start, e), filters, cap)
      size = Math.max(size, counted.size)
      if (counted.clean) break
    }
    if (image === null || size > image) total += size
    else imageChecked += size
  }
  return total
}
