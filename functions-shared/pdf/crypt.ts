// The standard security handler of an encrypted PDF, for the decompression check (stream-check.ts). pdf.js
// opens a PDF encrypted with an empty user password (a "protected" document: no copying or printing)
// without asking, and decrypts each stream before its filters, so a compressed stream is measured only
// once decrypted as pdf.js decrypts it: RC4 or AES-128 with a key for each object (revisions 2 to 4),
// AES-256 with the file's key (revisions 5 and 6), the key found for the empty password and checked
// against the document's /U entry.
import { md5 } from '@noble/hashes/legacy.js'
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js'
import { cbc } from '@noble/ciphers/aes.js'

/** A PDF string's bytes. */
interface PdfBytes {
  bytes: Uint8Array
}

/** A stream decrypter: the stream's data decrypted, given its object number and generation. */
export type Decrypter = (num: number, gen: number, data: Uint8Array) => Uint8Array

/** Why a document's encryption cannot be undone for the check. */
export class CryptError extends Error {
  override name = 'CryptError'
}

const PAD = Uint8Array.from([
  0x28,
  0xbf,
  0x4e,
  0x5e,
  0x4e,
  0x75,
  0x8a,
  0x41,
  0x64,
  0x00,
  0x4e,
  0x56,
  0xff,
  0xfa,
  0x01,
  0x08,
  0x2e,
  0x2e,
  0x00,
  0xb6,
  0xd0,
  0x68,
  0x3e,
  0x80,
  0x2f,
  0x0c,
  0xa9,
  0xfe,
  0x64,
  0x53,
  0x69,
  0x7a,
])

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}
const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

const nameOf = (v: unknown): string | undefined => (v && typeof v === 'object' && 'name' in v ? (v as { name: string }).name : undefined)
const bytesOf = (v: unknown): Uint8Array | undefined => (v && typeof v === 'object' && 'bytes' in v ? (v as PdfBytes).bytes : undefined)
const dictOf = (
  v: unknown,
): Map<string, unknown> | undefined => (v && typeof v === 'object' && 'dict' in v ? (v as { dict: Map<string, unknown> }).dict : undefined)

export function rc4(key: Uint8Array, data: Uint8Array): Uint8Array {
  const s = new Uint8Array(256)
  for (let i = 0; i < 256; i++) s[i] = i
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i]! + key[i % key.length]!) & 0xff
    ;[s[i], s[j]] = [s[j]!, s[i]!]
  }
  const out = new Uint8Array(data.length)
  for (let k = 0, i = 0, j = 0; k < data.length; k++) {
    i = (i + 1) & 0xff
    j = (j + s[i]!) & 0xff
    ;[s[i], s[j]] = [s[j]!, s[i]!]
    out[k] = data[k]! ^ s[(s[i]! + s[j]!) & 0xff]!
  }
  return out
}

/**
 * AES-CBC decryption of data that starts with its IV, its padding taken off when it is there; a last
 * block cut short is left out, as pdf.js leaves it.
 */
function aesDecrypt(key: Uint8Array, data: Uint8Array): Uint8Array {
  const blocks = Math.floor((data.length - 16) / 16)
  if (blocks < 1) return new Uint8Array(0)
  const plain = cbc(key, data.subarray(0, 16), { disablePadding: true }).decrypt(data.subarray(16, 16 + blocks * 16))
  const pad = plain[plain.length - 1]!
  return pad >= 1 && pad <= 16 ? plain.subarray(0, plain.length - pad) : plain
}

/** Algorithm 2.B of ISO 32000-2: the hash of revision 6, for the empty password. */
function hashR6(salt: Uint8Array, udata: Uint8Array): Uint8Array {
  let k = sha256(concat(salt, udata))
  for (let round = 0;; round++) {
    const k1 = concat(...Array.from({ length: 64 }, () => concat(k, udata)))
    const e = cbc(k.subarray(0, 16), k.subarray(16, 32), { disablePadding: true }).encrypt(k1)
    let sum = 0
    for (let i = 0; i < 16; i++) sum += e[i]!
    k = [sha256, sha384, sha512][sum % 3]!(e)
    if (round >= 63 && e[e.length - 1]! <= round - 31) break
  }
  return k.subarray(0, 32)
}

/**
 * The decrypter of a document whose trailer names `encrypt` (its /Encrypt dictionary) and `id` (the
 * first string of its /ID), for the empty user password; CryptError when the handler is not the
 * standard one, its revision is unknown, or the empty password is not the user's (pdf.js asks for one
 * then, and reads nothing).
 */
export function standardDecrypter(encrypt: Map<string, unknown>, id: Uint8Array): Decrypter {
  if (nameOf(encrypt.get('Filter')) !== 'Standard') {
    throw new CryptError(`the PDF is encrypted by the ${nameOf(encrypt.get('Filter')) ?? 'unknown'} security handler`)
  }
  const v = Number(encrypt.get('V') ?? 0)
  const r = Number(encrypt.get('R'))
  const o = bytesOf(encrypt.get('O')) ?? new Uint8Array(0)
  const u = bytesOf(encrypt.get('U')) ?? new Uint8Array(0)
  const p = Number(encrypt.get('P') ?? 0)
  const encryptMetadata = encrypt.get('EncryptMetadata') !== false
  // the method for streams: RC4 (V 1, 2), the crypt filter named by /StmF (V 4, 5)
  let method: 'rc4' | 'aes128' | 'aes256' | 'none' = 'rc4'
  let length = Number(encrypt.get('Length') ?? 40)
  if (v >= 4) {
    const stmF = nameOf(encrypt.get('StmF')) ?? 'Identity'
    const filter = stmF === 'Identity' ? undefined : dictOf(dictOf(encrypt.get('CF'))?.get(stmF))
    const cfm = filter ? nameOf(filter.get('CFM')) : 'None'
    method = cfm === 'AESV2' ? 'aes128' : cfm === 'AESV3' ? 'aes256' : cfm === 'V2' ? 'rc4' : 'none'
    if (filter && filter.get('Length') !== undefined) length = Number(filter.get('Length'))
  }
  if (r >= 5) {
    if (u.length < 48) throw new CryptError('the PDF is encrypted with a /U entry too short for its revision')
    const ue = bytesOf(encrypt.get('UE')) ?? new Uint8Array(0)
    const validation = r === 5 ? sha256(u.subarray(32, 40)) : hashR6(u.subarray(32, 40), new Uint8Array(0))
    if (!equal(validation, u.subarray(0, 32))) throw new CryptError('the PDF is encrypted with a password')
    const intermediate = r === 5 ? sha256(u.subarray(40, 48)) : hashR6(u.subarray(40, 48), new Uint8Array(0))
    if (ue.length !== 32) throw new CryptError('the PDF is encrypted with a /UE entry of the wrong size')
    const key = cbc(intermediate, new Uint8Array(16), { disablePadding: true }).decrypt(ue)
    return (_num, _gen, data) => (method === 'none' ? data : aesDecrypt(key, data))
  }
  if (r < 2 || r > 4) throw new CryptError(`the PDF is encrypted with revision ${r} of the standard handler`)
  // algorithm 2: the file key from the padded empty password, /O, /P, the document's ID
  const n = r === 2 ? 5 : Math.max(5, Math.min(16, Math.floor(length > 16 ? length / 8 : length)))
  const pBytes = new Uint8Array([p & 0xff, (p >> 8) & 0xff, (p >> 16) & 0xff, (p >>> 24) & 0xff])
  let hash = md5(concat(PAD, o.subarray(0, 32), pBytes, id, r >= 4 && !encryptMetadata ? new Uint8Array([0xff, 0xff, 0xff, 0xff]) : new Uint8Array(0)))
  if (r >= 3) { for (let i = 0; i < 50; i++) hash = md5(hash.subarray(0, n)) }
  const key = hash.subarray(0, n)
  // algorithms 4 and 5: /U made from that key says whether the empty password is the user's
  const check = r === 2 ? equal(rc4(key, PAD), u.subarray(0, 32)) : (() => {
    let x = rc4(key, md5(concat(PAD, id)))
    for (let i = 1; i <= 19; i++) x = rc4(key.map((b) => b ^ i), x)
    return equal(x, u.subarray(0, 16))
  })()
  if (!check) throw new CryptError('the PDF is encrypted with a password')
  return (num, gen, data) => {
    if (method === 'none') return data
    const aes = method === 'aes128'
    const objectKey = md5(
      concat(
        key,
        new Uint8Array([num & 0xff, (num >> 8) & 0xff, (num >> 16) & 0xff, gen & 0xff, (gen >> 8) & 0xff]),
        aes ? new Uint8Array([0x73, 0x41, 0x6c, 0x54]) : new Uint8Array(0),
      ),
    ).subarray(0, Math.min(n + 5, 16))
    return aes ? aesDecrypt(objectKey, data) : rc4(objectKey, data)
  }
}

/**
 * Streams that the handler may leave as written: a cross-reference stream, metadata (with /EncryptMetadata
 * false), one with a Crypt filter. pdf.js decrypts every stream it parses but the catalog's metadata, so
 * the check counts such a stream both ways.
 */
export function mayBePlain(dictionary: Map<string, unknown>): boolean {
  const type = nameOf(dictionary.get('Type'))
  if (type === 'XRef' || type === 'Metadata') return true
  const filters = dictionary.get('F') ?? dictionary.get('Filter')
  return (Array.isArray(filters) ? filters : [filters]).some((f) => nameOf(f) === 'Crypt')
}
