// cl100k_base token counting and splitting behind one small interface, so the implementation can be
// swapped for a faster one; `npm run bench:tokenizer` measures the candidates and the tests check that
// they agree token for token.
//
// Encoding (the hot path) is gpt-tokenizer's, pure JS on Node and Deno and the fastest measured.
// Decoding is js-tiktoken's: gpt-tokenizer decodes through one module-wide TextDecoder in streaming
// mode that is never flushed, so a window ending inside a multi-byte character leaks its partial bytes
// into the next decode call (seen with Arabic: "إلى\uFFFD غروب"). js-tiktoken's decode is stateless.
import { encode } from 'gpt-tokenizer/encoding/cl100k_base'
import { getEncoding } from 'js-tiktoken'

export interface Tokenizer {
  readonly name: string
  encode(text: string): number[]
  decode(tokens: readonly number[]): string
}

let tiktoken: ReturnType<typeof getEncoding> | undefined

export const cl100k: Tokenizer = {
  name: 'cl100k_base (gpt-tokenizer encode, js-tiktoken decode)',
  encode: (text) => encode(text),
  decode: (tokens) => (tiktoken ??= getEncoding('cl100k_base')).decode(tokens as number[]),
}

export const defaultTokenizer = cl100k
