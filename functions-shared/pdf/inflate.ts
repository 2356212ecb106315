// How far a stream's data expands through its filters, counted chunk by chunk and never held whole.

import { decoder, EXPANDING, type Filter } from './decoders.ts'

/**
 * The size of a zlib stream as pdf.js's own decoder reads it (FlateStream, which pdf.js falls back to
 * when the platform's refuses the data): no check that a match reaches back only into the output, an
 * empty stored block with a zero NLEN taken, a bad code the end. Only the size is counted.
 */
export function lenientInflateSize(data: Uint8Array, cap: number): number {
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
    for (let len = 1, code = 0, skip = 2; len <= maxLen; ++len, code <<= 1, skip <<= 1) {
      for (let val = 0; val < lengths.length; ++val) {
        if (lengths[val] === len) {
          let reversed = 0
          for (let i = 0, t = code; i < len; ++i, t >>= 1) reversed = (reversed << 1) | (t & 1)
          for (let i = reversed; i < codes.length; i += skip) codes[i] = (len << 16) | val
          ++code
        }
      }
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
    for (let last = false; !last && total <= cap;) {
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
        for (let i = 0, len = 0; i < lengths.length;) {
          const code = symbol(codeLenTable)
          if (code < 16) {
            lengths[i++] = len = code
            continue
          }
          const [extra, base, what] = code === 16 ? [2, 3, len] : code === 17 ? [3, 3, len = 0] : [7, 11, len = 0]
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
export async function decodedSize(data: Uint8Array, filters: readonly Filter[], cap: number): Promise<{ size: number; clean: boolean }> {
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
