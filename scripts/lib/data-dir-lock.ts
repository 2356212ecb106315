// One process per DATA_DIR. The embedded database is one PGlite instance over files; two processes on
// the same folder would each keep their own copy in memory and overwrite each other's writes. Like
// PostgreSQL's postmaster.pid, a lock file created exclusively holds the owner's PID (with its start
// time and host), and a lock whose process is gone — or whose PID now belongs to another process — is
// stale and taken over.
import { hostname } from 'node:os'
import { readFileSync } from 'node:fs'
import { link, readFile, unlink, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'

export const LOCK_FILE = 'curriculum-tutor.pid'

export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError'
  readonly dir: string
  readonly pid: number
  constructor(dir: string, pid: number, host: string) {
    const where = host === hostname() ? `process ${pid}` : `process ${pid} on host ${host}`
    super(`the data directory ${dir} is in use by ${where} (another npm start?); stop that process, or set DATA_DIR to another folder`)
    this.dir = dir
    this.pid = pid
  }
}

export interface DataDirLock {
  readonly file: string
  release(): Promise<void>
}

interface Owner {
  pid: number
  started: string
  host: string
}

/** The process's start time as the kernel counts it (Linux), to tell a reused PID from the owner. */
function processStart(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? ''
  } catch {
    return ''
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' // exists, owned by another user
  }
}

function parse(text: string): Owner | null {
  const [pid, started = '', host = ''] = text.split('\n')
  const n = Number(pid)
  return Number.isInteger(n) && n > 0 ? { pid: n, started, host } : null
}

/** Folders this process holds: a second open of one of them in the same process is refused too. */
const held = new Set<string>()

function stale(owner: Owner | null, dir: string): boolean {
  if (!owner) return true // not a lock this program wrote
  if (owner.host !== hostname()) return false // cannot be checked from here: respected
  if (owner.pid === process.pid) return !held.has(dir) // our PID from an earlier life (a container restart)
  if (!alive(owner.pid)) return true
  const started = processStart(owner.pid)
  return owner.started !== '' && started !== '' && started !== owner.started // the PID was reused
}

/** Takes the folder's lock or throws DataDirLockedError, touching nothing else in the folder. */
export async function lockDataDir(folder: string): Promise<DataDirLock> {
  const dir = resolve(folder)
  const file = join(dir, LOCK_FILE)
  const content = `${process.pid}\n${processStart(process.pid)}\n${hostname()}\n`
  // written aside, then linked into place: the lock file appears whole or not at all
  const aside = `${file}.${process.pid}.tmp`
  await writeFile(aside, content, { mode: 0o600, flush: true })
  try {
    return await take(dir, file, aside, content)
  } finally {
    await unlink(aside).catch(() => {})
  }
}

async function take(dir: string, file: string, aside: string, content: string): Promise<DataDirLock> {
  for (let tries = 0; tries < 5; tries++) {
    try {
      await link(aside, file)
      held.add(dir)
      return {
        file,
        async release() {
          if (!held.delete(dir)) return
          // only our own lock is removed
          if ((await readFile(file, 'utf8').catch(() => '')) === content) await unlink(file).catch(() => {})
        },
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const text = await readFile(file, 'utf8').catch(() => null)
    if (text === null) continue // removed meanwhile: try again
    const owner = parse(text)
    if (!stale(owner, dir)) throw new DataDirLockedError(dir, owner!.pid, owner!.host)
    // stale: removed only if it still holds what was judged (another process may have taken it over)
    if ((await readFile(file, 'utf8').catch(() => null)) === text) await unlink(file).catch(() => {})
  }
  throw new Error(`could not take the lock ${file}`)
}
