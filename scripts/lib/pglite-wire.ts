// The PostgreSQL wire protocol as the embedded database's socket server speaks it: message framing and
// parsing, the FATAL answers it ends clients with, and the per-client names of statements and portals.
import type { Socket } from 'node:net'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { Client } from './pglite-session.ts'

export const SSL_REQUEST = 80877103
export const GSSENC_REQUEST = 80877104
export const CANCEL_REQUEST = 80877102
export const PROTOCOL_3 = 196608
/** the largest message a client may send (PostgreSQL's limit is 1 GB; nothing here comes near this) */
export const MAX_MESSAGE_BYTES = 256 * 1024 * 1024

const encoder = new TextEncoder()

export function cstring(s: string): Buffer {
  return Buffer.concat([Buffer.from(encoder.encode(s)), Buffer.from([0])])
}

export function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

export const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

/** The password given equals the expected one, compared in time that does not tell how much of it matched. */
export function samePassword(given: Buffer, expected: string): boolean {
  const digest = (b: Buffer | string) => createHash('sha256').update(b).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

/** A FATAL ErrorResponse, for the clients this server turns away or ends. */
export function fatal(code: string, text: string): Buffer {
  return message('E', Buffer.concat([Buffer.from('SFATAL\0VFATAL\0C'), cstring(code), Buffer.from('M'), cstring(text), Buffer.from([0])]))
}

/**
 * Tells a client that has no slot why and closes its socket once that is written, without waiting for
 * the client to close its end: one that never does would keep the file descriptor.
 */
export function letGo(socket: Socket, why: Buffer): void {
  socket.end(why, () => socket.destroy())
}

/** Reads a C string at `offset`: the string and the offset after its NUL. */
function readCString(buf: Buffer, offset: number): [string, number] {
  const end = buf.indexOf(0, offset)
  return [buf.toString('utf8', offset, end), end + 1]
}

/** Startup parameters worth applying per client (user and database are the session's own). */
export function startupParams(packet: Buffer): [string, string][] {
  const params: [string, string][] = []
  let offset = 8
  while (offset < packet.length - 1) {
    const [key, next] = readCString(packet, offset)
    const [value, after] = readCString(packet, next)
    offset = after
    if (!['user', 'database', 'replication', 'options', 'client_encoding'].includes(key)) params.push([key, value])
  }
  return params
}

/** Gives prepared statement and portal names a per-client prefix (the unnamed ones stay unnamed). */
export function rename(client: Client, msg: Buffer): Buffer {
  const type = String.fromCharCode(msg[0]!)
  const prefix = (name: string) => (name === '' ? '' : `c${client.id}_${name}`)
  const rebuild = (parts: Buffer[]) => message(type, Buffer.concat(parts))
  if (type === 'P') {
    const [name, next] = readCString(msg, 5)
    const renamed = prefix(name)
    if (renamed) client.statements.add(renamed)
    return rebuild([cstring(renamed), msg.subarray(next)])
  }
  if (type === 'B') {
    const [portal, next] = readCString(msg, 5)
    const [statement, after] = readCString(msg, next)
    return rebuild([cstring(prefix(portal)), cstring(prefix(statement)), msg.subarray(after)])
  }
  if (type === 'E') {
    const [portal, next] = readCString(msg, 5)
    return rebuild([cstring(prefix(portal)), msg.subarray(next)])
  }
  if (type === 'D' || type === 'C') {
    const [name] = readCString(msg, 6)
    if (type === 'C' && msg[5] === 0x53) client.statements.delete(prefix(name))
    return rebuild([msg.subarray(5, 6), cstring(prefix(name))])
  }
  return msg
}
