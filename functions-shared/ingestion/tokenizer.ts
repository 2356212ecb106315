// cl100k_base token counting and splitting behind one small interface, so the implementation can be
// swapped for a faster one; `npm run bench:tokenizer` measures the candidates and the tests check that
// they agree token for token.
//
// Encoding (the hot path) is gpt-tokenizer's, pure JS on Node and Deno and the fastest measured.
// Decoding reads gpt-tokenizer's own table of each token's text or bytes, and decodes the bytes with a
// decoder of its own, as js-tiktoken does: gpt-tokenizer's decode goes through one module-wide
// TextDecoder in streaming mode that is never flushed, so a window ending inside a multi-byte character
// leaked its partial bytes into the next decode call (seen with Arabic: "إلى\uFFFD غروب"). js-tiktoken's
// table, which decoded before, took a third of a second to build in every new process.
import cl100kBase, { encode } from 'gpt-tokenizer/encoding/cl100k_base'

export interface Tokenizer {
  readonly name: string
  encode(text: string): number[]
  decode(tokens: readonly number[]): string
}

// each token's text, or its bytes where they are not whole characters (a public method of the encoding
// gpt-tokenizer keeps in a field its types call private; the tokenizer tests fail if it moves)
const parts = (cl100kBase as unknown as { bytePairEncodingCoreProcessor: { decodeNativeGenerator(tokens: Iterable<number>): Iterable<string | Uint8Array> } })
  .bytePairEncodingCoreProcessor
const utf8 = new TextEncoder()
const decoder = new TextDecoder()

/** The text of tokens, a character they cut as U+FFFD (as js-tiktoken and TextDecoder make it); no state kept between calls. */
function decode(tokens: readonly number[]): string {
  const pieces = [...parts.decodeNativeGenerator(tokens)]
  if (pieces.every((p) => typeof p === 'string')) return pieces.join('')
  const bytes = pieces.map((p) => (typeof p === 'string' ? utf8.encode(p) : p))
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0))
  let at = 0
  for (const b of bytes) {
    all.set(b, at)
    at += b.length
  }
  return decoder.decode(all)
}

export const cl100k: Tokenizer = {
  name: 'cl100k_base (gpt-tokenizer)',
  encode: (text) => encode(text),
  decode,
}

export const defaultTokenizer = cl100k
