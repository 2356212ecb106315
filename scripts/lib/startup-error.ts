// What goes wrong when a program of the stack starts, as one sentence that names the thing and the fix
// (a taken port, an unreachable database, a locked data directory), instead of a stack trace.
import { DataDirLockedError } from './data-dir-lock.ts'

export class StartupError extends Error {
  override name = 'StartupError'
}

type Errno = Error & { code?: string; port?: number; address?: string; syscall?: string; path?: string; errors?: Errno[] }

/** The URL with its password masked, for messages and logs. */
export function safeDbUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@')
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'unknown host',
  EAI_AGAIN: 'the host name cannot be resolved',
  ETIMEDOUT: 'the connection timed out',
  CONNECT_TIMEOUT: 'the connection timed out',
  ECONNRESET: 'the connection was reset',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  '28P01': 'the password was refused',
  '28000': 'the login was refused',
  '3D000': 'the database does not exist',
}

/** The first errno-like code of an error, looking into AggregateError and causes. */
function codeOf(err: unknown): string | undefined {
  const e = err as Errno | undefined
  if (!e || typeof e !== 'object') return undefined
  return e.code ?? (e.errors ?? []).map(codeOf).find(Boolean) ?? codeOf((e as { cause?: unknown }).cause)
}

/** A database that cannot be reached or logged into: the sentence, or null for any other error. */
export function unreachableDatabase(err: unknown, url: string, fix: string): StartupError | null {
  const code = codeOf(err)
  const reason = code ? REASONS[code] : undefined
  if (!reason) return null
  return new StartupError(`cannot reach the database at ${safeDbUrl(url)} (${reason}); ${fix}`)
}

/** A port that cannot be listened on. */
export function portProblem(err: unknown, what: string, setting: string, host: string, port: number): StartupError | null {
  const code = codeOf(err)
  if (code === 'EADDRINUSE') {
    return new StartupError(
      `${what}: port ${port} on ${host} is already in use (another npm start?); stop that program, or set ${setting} to a free port (0 picks one)`,
    )
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new StartupError(`${what}: port ${port} on ${host} is not allowed for this user; set ${setting} to a port above 1023`)
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new StartupError(`${what}: ${host} is not an address of this machine; set HOST`)
  return null
}

/** Any startup failure as a sentence; null when it is none of the known ones (then the stack is worth showing). */
export function explainStartup(err: unknown): string | null {
  if (err instanceof StartupError || err instanceof DataDirLockedError) return err.message
  const e = err as Errno
  if (e?.code === 'EACCES' && e.path) return `cannot write ${e.path} (permission denied); set DATA_DIR to a folder this user can write`
  if (e?.code === 'ENOSPC') return `the disk is full (${e.path ?? 'data directory'}); free some space`
  return null
}

/** Ends the program with one line on stderr and exit code 1 (the stack only when the error is unknown). */
export function exitWithStartupError(program: string, err: unknown): never {
  const sentence = explainStartup(err)
  process.stderr.write(`${program}: ${sentence ?? `could not start: ${(err as Error)?.stack ?? String(err)}`}\n`)
  process.exit(1)
}
