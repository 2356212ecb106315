// cl100k_base tokenizers on French and Arabic text (lesson vocabulary, and random unseen words): MB/s for each candidate, ratios against
// js-tiktoken (the baseline) measured in the same run, and a check that all give the same tokens.
import { encode as gptEncode } from 'gpt-tokenizer/encoding/cl100k_base'
import { getEncoding } from 'js-tiktoken'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from '../test/helpers/portal.ts'
import { machine } from './lib/machine.ts'

const MB = Number(process.env.BENCH_MB ?? 2)
const tiktoken = getEncoding('cl100k_base')

/** The lessons' words shuffled into new sentences (a realistic vocabulary, so words repeat). */
function shuffled(source: string, bytes: number, seed: number): string {
  const words = source.split(/\s+/)
  let x = seed
  const out: string[] = []
  let size = 0
  while (size < bytes) {
    x = (x * 1103515245 + 12345) % 2 ** 31
    const w = words[x % words.length]!
    out.push(w)
    size += Buffer.byteLength(w) + 1
  }
  return out.join(' ')
}

/** Random words from the script's letters: almost every word unseen, so no per-word cache helps. */
function randomWords(letters: string, bytes: number, seed: number): string {
  const chars = Array.from(letters)
  let x = seed
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31)
  const out: string[] = []
  let size = 0
  while (size < bytes) {
    let w = ''
    for (let n = 2 + (next() % 8); n > 0; n--) w += chars[next() % chars.length]
    out.push(w)
    size += Buffer.byteLength(w) + 1
  }
  return out.join(' ')
}

const candidates: [string, (t: string) => number[]][] = [
  ['js-tiktoken (baseline)', (t) => tiktoken.encode(t)],
  ['gpt-tokenizer', (t) => gptEncode(t)],
]

machine()
console.log(`cl100k_base encode, ${MB} MB per text\n`)
const FR_LETTERS = 'abcdefghijlmnopqrstuvéèàêçô'
const AR_LETTERS = 'ابتثجحخدذرزسشصضطظعغفقكلمنهوية'
const texts: [string, string][] = [
  ['French, lesson words', shuffled(`${FR_LESSON} ${PHYSICS_LESSON}`, MB * 1024 * 1024, 7)],
  ['Arabic, lesson words', shuffled(AR_LESSON, MB * 1024 * 1024, 7)],
  ['French, random words', randomWords(FR_LETTERS, MB * 1024 * 1024, 11)],
  ['Arabic, random words', randomWords(AR_LETTERS, MB * 1024 * 1024, 11)],
]
for (const [language, text] of texts) {
  const bytes = Buffer.byteLength(text)
  const results: [string, number, number[]][] = []
  for (const [name, encode] of candidates) {
    encode(text.slice(0, 10_000)) // warm-up
    const started = performance.now()
    const tokens = encode(text)
    results.push([name, bytes / 1024 / 1024 / ((performance.now() - started) / 1000), tokens])
  }
  const same = results.every(([, , t]) => t.length === results[0]![2].length && t.every((v, i) => v === results[0]![2][i]))
  const base = results[0]![1]
  for (const [name, mbs, tokens] of results) {
    console.log(`${language.padEnd(21)} ${name.padEnd(24)} ${mbs.toFixed(2).padStart(6)} MB/s   ${(mbs / base).toFixed(2)}x   ${tokens.length} tokens`)
  }
  console.log(`${language.padEnd(21)} identical tokens: ${same}\n`)
}
