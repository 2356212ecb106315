// How far a PDF's compressed streams expand, measured before pdf.js reads them. pdf.js inflates a page's
// content stream whole, in memory and without a limit (what a decompression bomb did to the server:
// docs/pipeline.md). Each compressed stream is decoded here chunk
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
// are decrypted first, as pdf.js decrypts them (crypt.ts).
//
// Images are left out of the total when they are what they say: a scan's pages are large once inflated,
// and pdf.js inflates an image only to render it, no further than its size (capped by maxImageSize). A
// stream that says /Subtype /Image but decodes to more than its width, height and colours hold is
// counted like any other: pdf.js reads a stream that a page names as its content whatever it says.

import { CryptError, type Decrypter, mayBePlain, standardDecrypter } from './crypt.ts'
import { asName, asNumber, dataEnds, dataStart, Lexer, objectsAt, type PdfDict, type PdfValue, regular, streamDictionary, type StreamHead } from './objects.ts'
import { filtersOf, GUESSES } from './decoders.ts'
import { decodedSize } from './inflate.ts'

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

/** The most pixels an image may have (pdf.js's maxImageSize as extract.ts sets it). */
export const MAX_IMAGE_PIXELS = 16 * 1024 * 1024

/** The most streams decoded in one PDF: a lesson has hundreds, a 500-page scanned book a few thousand. */
export const MAX_DECODED_STREAMS = 10_000
// the bytes fed to the decoders, at most: the file's streams do not overlap, save a few tried to two ends;
// streams written inside one another, or keywords by the thousand before one far "endstream", would make
// the work grow with their square
const INPUT_PER_FILE_BYTE = 4
const INPUT_ALLOWANCE = 64 * 1024 * 1024
// the image data decoded to check images, at most; past it, images count like other streams
const IMAGE_CHECK_BYTES = 2 * 1024 * 1024 * 1024

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
  const components = mask || named === 'DeviceGray' || named === 'CalGray' || named === 'Indexed' || named === 'Separation'
    ? 1
    : named === 'DeviceRGB' || named === 'CalRGB' || named === 'Lab'
    ? 3
    : 4
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
export async function streamCheck(
  bytes: Uint8Array,
  limit = MAX_INFLATED_BYTES,
  deadlineAt = Number.POSITIVE_INFINITY,
): Promise<{ inflated: number; largestImagePixels: number }> {
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
    if (Date.now() > deadlineAt) throw new StreamCheckLate("checking its compressed streams took longer than the extraction's deadline")
  }
  const decrypters = decryptersOf(text, [...heads.values()].map((h) => h.head))
  let largestImagePixels = 0
  for (const { head } of heads.values()) largestImagePixels = Math.max(largestImagePixels, imagePixels(head?.dict ?? null))
  for (const { start, head } of heads.values()) {
    if (total > limit) break
    const dictionary = head?.dict ?? null
    // an encrypted stream whose object cannot be told cannot be decrypted: such a file is not checked
    if (decrypters.length > 0 && !head) throw new StreamCheckError("the PDF is encrypted, and a stream's dictionary cannot be read")
    const ends = dataEnds(text, start, dictionary, endstreamIndex)
    if (ends.length === 0) break
    // filters read, else every guess (the largest count is taken)
    const read = dictionary ? filtersOf(text, dictionary) : null
    const readings = read ?? GUESSES
    if (readings.length > 0 && ++decoded > MAX_DECODED_STREAMS) {
      throw new StreamCheckError(`the PDF has more than ${MAX_DECODED_STREAMS} compressed streams to check`)
    }
    if (Date.now() > deadlineAt) throw new StreamCheckLate("checking its compressed streams took longer than the extraction's deadline")
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
          if ((input += e - start) > inputBudget) throw new StreamCheckError("the PDF's streams are written inside one another: they cannot be checked")
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
