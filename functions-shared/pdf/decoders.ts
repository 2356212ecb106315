// The PDF filters that expand data (FlateDecode, BrotliDecode, LZWDecode, RunLengthDecode, ASCIIHexDecode,
// ASCII85Decode) as streaming decoders, and the filters a stream's dictionary names.

import { asName, asNumber, type PdfDict, type PdfValue, resolved } from './objects.ts'

export const FILTERS: Record<string, string> = { Fl: 'FlateDecode', LZW: 'LZWDecode', RL: 'RunLengthDecode', AHx: 'ASCIIHexDecode', A85: 'ASCII85Decode' }

export interface Filter {
  name: string
  /** LZW's EarlyChange: 1 (the default) widens the codes one code early */
  earlyChange: number
}

/**
 * The stream's filters, in the order they apply: /F, else /Filter, and /DP, else /DecodeParms, as pdf.js
 * reads them (its Dict.get("F", "Filter")), references followed. Null when a filter cannot be read.
 */
export function filtersOf(text: string, dictionary: PdfDict): Filter[] | null {
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
export const GUESSES: Filter[][] = [['FlateDecode'], ['LZWDecode'], ['RunLengthDecode'], ['BrotliDecode'], ['ASCIIHexDecode', 'FlateDecode'], [
  'ASCII85Decode',
  'FlateDecode',
]].map((names) => names.map((name) => ({ name, earlyChange: 1 })))

export const EXPANDING = new Set(['FlateDecode', 'BrotliDecode', 'LZWDecode', 'RunLengthDecode', 'ASCIIHexDecode', 'ASCII85Decode'])

/** A decoder for one of the filters that expand data; undefined for the others (image codecs, Crypt). */
export function decoder(filter: Filter): TransformStream<Uint8Array, Uint8Array> | undefined {
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
export type ByteDecoder = (byte: number, out: (b: number) => void) => boolean

export function byteDecoder(decode: ByteDecoder): TransformStream<Uint8Array, Uint8Array> {
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
export function lzw(earlyChange: number): TransformStream<Uint8Array, Uint8Array> {
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
    for (let k = 0; k < sequenceLength;) {
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
