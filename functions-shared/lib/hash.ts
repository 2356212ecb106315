// SHA-256 of text, synchronously (no trip to the crypto thread pool on a request's path), and the one
// JSON form of a value whatever the order its keys were written in: what request hashes are made of.
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'

export const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)))

/** SHA-256 of bytes (a downloaded file), hex. */
export const sha256BytesHex = (bytes: Uint8Array): string => bytesToHex(sha256(bytes))

/** JSON with every object's keys in order. */
export function canonicalJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])]))
      : v
  return JSON.stringify(sorted(value))
}
