// Whether a DATABASE_URL's host and port speak PostgreSQL, asked before the driver connects: the
// driver, given a port where another server answers (an HTTP server that replies and hangs up), tries
// again and again without a word, and `npm start` hung for minutes. The probe sends PostgreSQL's
// SSLRequest, which any PostgreSQL server answers with one byte, S or N, and nothing else does.
import { connect } from 'node:net'
import { safeDbUrl, StartupError } from './startup-error.ts'

/** Resolves when the server at `url` answers as PostgreSQL; a StartupError naming what it did otherwise. */
export function probePostgres(url: string, timeoutMs = 10_000): Promise<void> {
  const target = new URL(url)
  const host = decodeURIComponent(target.hostname.replace(/^\[|\]$/g, '')) || '127.0.0.1'
  const port = Number(target.port || 5432)
  // a socket path (host=/var/run/postgresql) is left to the driver
  if (target.searchParams.has('host') || host.startsWith('/')) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port })
    const fail = (why: string) => {
      socket.destroy()
      reject(
        new StartupError(
          `cannot reach the database at ${safeDbUrl(url)} (${why}); start PostgreSQL or fix DATABASE_URL (unset it to use the embedded database)`,
        ),
      )
    }
    const timer = setTimeout(() => fail(`no answer within ${timeoutMs / 1000} s`), timeoutMs)
    socket.once('connect', () => {
      // SSLRequest: length 8, code 80877103
      const request = Buffer.alloc(8)
      request.writeInt32BE(8, 0)
      request.writeInt32BE(80877103, 4)
      socket.write(request)
    })
    socket.once('data', (data: Buffer) => {
      clearTimeout(timer)
      const first = String.fromCharCode(data[0] ?? 0)
      if ((first === 'S' || first === 'N') && data.length === 1) {
        socket.destroy()
        return resolve()
      }
      const shown = data.subarray(0, 40).toString('latin1').replace(/[^\x20-\x7e]+/g, ' ').trim()
      fail(`the server on port ${port} is not PostgreSQL: it answered "${shown}"`)
    })
    socket.once('close', () => {
      clearTimeout(timer)
      fail(`the server on port ${port} closed the connection without answering as PostgreSQL does`)
    })
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      fail(err.code === 'ECONNREFUSED' ? 'connection refused' : err.code === 'ENOTFOUND' ? 'unknown host' : err.message)
    })
  })
}
