// How far a PDF's compressed streams expand, measured before pdf.js reads them. pdf.js inflates a page's
// content stream whole, in memory and without a limit: a 2 MB upload whose one content stream expands to
// 2 GiB took 5 GB of memory and stalled the server for 44 s. Each FlateDecode stream that is not an image
// (content streams, fonts, forms, object streams) is inflated here chunk by chunk and only counted, and
// the PDF is refused once their total passes the limit. Images are left out: a scan's pages are large
// once inflated and pdf.js inflates an image only to render it (capped by maxImageSize).

/** The most that a PDF's non-image FlateDecode streams may expand to, together. */
export const MAX_INFLATED_BYTES = 256 * 1024 * 1024

// a stream's dictionary is at most this far before its data, as a typesetter writes it
const DICTIONARY_REACH = 4096

/**
 * The total size of the PDF's non-image FlateDecode streams once inflated, counted up to `limit` (the
 * count stops a little past it). A stream that does not inflate cleanly counts what it gave: pdf.js
 * judges it.
 */
export async function inflatedSize(bytes: Uint8Array, limit = MAX_INFLATED_BYTES): Promise<number> {
  // one byte, one character: positions in the text are positions in the bytes
  const text = new TextDecoder('latin1').decode(bytes)
  let total = 0
  for (let at = text.indexOf('stream'); at !== -1 && total <= limit; at = text.indexOf('stream', at + 6)) {
    if (text.startsWith('end', at - 3)) continue // "endstream"
    const start = text[at + 6] === '\r' && text[at + 7] === '\n' ? at + 8 : text[at + 6] === '\n' ? at + 7 : -1
    if (start === -1) continue
    const dictionary = text.slice(Math.max(0, at - DICTIONARY_REACH, text.lastIndexOf('obj', at)), at)
    const end = text.indexOf('endstream', start)
    if (end === -1) break
    at = end + 9
    if (!/\/(?:FlateDecode|Fl)\b/.test(dictionary) || /\/Subtype\s*\/Image\b/.test(dictionary)) continue
    total += await inflated(bytes.subarray(start, end), limit - total + 1)
  }
  return total
}

/** The size of a zlib stream once inflated, counted chunk by chunk, stopping past `limit`. */
async function inflated(data: Uint8Array, limit: number): Promise<number> {
  const stream = new DecompressionStream('deflate')
  const writer = stream.writable.getWriter()
  writer.write(data as Uint8Array<ArrayBuffer>).catch(() => {})
  writer.close().catch(() => {})
  const reader = stream.readable.getReader()
  let size = 0
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > limit) {
        await reader.cancel().catch(() => {})
        break
      }
    }
  } catch {
    // corrupt or cut short (a stream's end-of-line before "endstream"): what it gave counts
  }
  return size
}
