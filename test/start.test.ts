// `npm start` end to end: the real process, the embedded database on disk, the printed URLs and keys.
import type { AddressInfo } from 'node:net'
import { createServer as createHttpServer } from 'node:http'
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { hostname } from 'node:os'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { createClient } from '@supabase/supabase-js'
import { afterAll, describe, expect, it } from 'vitest'
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../scripts/lib/data-dir-lock.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { startStackProcess } from './helpers/stack-process.ts'

const root = new URL('..', import.meta.url).pathname
const node = `${root}node_modules/.bin/node`
const dirs: string[] = []
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))))

interface Started {
  child: ChildProcess
  output: () => string
  /** what createClient takes */
  baseUrl: string
  /** the functions' base */
  apiUrl: string
  dbUrl: string
  anonKey: string
  serviceKey: string
}

async function start(env: Record<string, string>): Promise<Started> {
  const { child, output, line } = await startStackProcess(env)
  return {
    child,
    output,
    baseUrl: line('API URL'),
    apiUrl: line('Functions URL'),
    dbUrl: line('Database URL'),
    anonKey: line('anon key'),
    serviceKey: line('service_role key'),
  }
}

async function stop(s: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => s.child.once('exit', (code) => resolve(code)))
  s.child.kill('SIGINT')
  return exited
}

describe('npm start (embedded mode)', () => {
  it('serves the API, prints a database URL that clients can use, and shuts down cleanly on Ctrl-C', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ct-start-'))
    dirs.push(dataDir)
    const s = await start({ DATA_DIR: dataDir, ADMIN_API_KEY: 'start-test-key' })
    try {
      expect(s.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      // a fresh data directory: the demo PDFs are made, and the log says so first
      expect(s.output()).toContain("making the demo portal's")
      expect(s.apiUrl).toBe(`${s.baseUrl}/functions/v1`)
      // the printed API URL and anon key are what supabase-js takes
      const client = createClient(s.baseUrl, s.anonKey, { auth: { persistSession: false, autoRefreshToken: false } })
      const signUp = await client.auth.signUp({ email: 'start@example.mr', password: 'Start-passw0rd!' })
      expect(signUp.error).toBeNull()
      expect(signUp.data.user?.email).toBe('start@example.mr')
      const invoked = await client.functions.invoke('health', { method: 'GET' })
      expect(invoked.data).toMatchObject({ status: 'ok' })
      // npm run status prints the same, as .env lines too
      const port = new URL(s.baseUrl).port
      const status = await run('scripts/status.ts', { PORT: port, DB_PORT: new URL(s.dbUrl).port, DATA_DIR: dataDir }, ['-o', 'env'])
      expect(status.code, status.err).toBe(0)
      expect(status.out).toContain(`SUPABASE_URL="${s.baseUrl}"\nSUPABASE_ANON_KEY="${s.anonKey}"\n`)
      expect(status.out).toContain(`SUPABASE_DB_URL="${s.dbUrl}"`)
      // the same block as npm start's, rows for the health check, the reference and the demo portal included
      const block = await run('scripts/status.ts', { PORT: port, DB_PORT: new URL(s.dbUrl).port, DATA_DIR: dataDir })
      expect(block.code, block.err).toBe(0)
      for (const row of ['API URL', 'Functions URL', 'Auth URL', 'Health', 'API reference', 'Demo portal', 'Database URL', 'anon key', 'service_role key']) {
        expect(block.out.split('\n').find((l) => l.trim().startsWith(row)), row).toBe(s.output().split('\n').find((l) => l.trim().startsWith(row)))
      }
      // with another data folder (another JWT secret) its keys are not this stack's: status, admin and demo say so
      const elsewhere = await mkdtemp(join(tmpdir(), 'ct-start-other-'))
      dirs.push(elsewhere)
      await writeFile(join(elsewhere, 'jwt-secret'), `${'x'.repeat(40)}\n`, { mode: 0o600 })
      for (
        const [script, env] of [['scripts/status.ts', { PORT: port, DATA_DIR: elsewhere }], ['scripts/admin.ts', { CT_URL: s.baseUrl, DATA_DIR: elsewhere }], [
          'scripts/demo.ts',
          { DEMO_URL: s.baseUrl, DATA_DIR: elsewhere },
        ]] as const
      ) {
        const r = await run(script, env, script === 'scripts/admin.ts' ? ['stats'] : [])
        expect(r.code, `${script}: ${r.out}${r.err}`).toBe(1)
        expect(r.err, script).toMatch(/refuses the keys these settings make: it was started with another JWT secret \(another DATA_DIR, or JWT_SECRET\)/)
      }
      const health = await fetch(`${s.apiUrl}/health`, { headers: { 'X-Request-ID': 'abc-123' } })
      expect(health.status).toBe(200)
      expect(health.headers.get('x-request-id')).toBe('abc-123')
      expect(await health.json()).toMatchObject({ status: 'ok' })

      const missing = await fetch(`${s.apiUrl}/does-not-exist`)
      expect(missing.status).toBe(404)
      expect(await missing.json()).toMatchObject({ error: 'not_found', request_id: expect.any(String) })
      const outside = await fetch(s.apiUrl.replace('/functions/v1', '/nowhere'))
      expect(outside.status).toBe(404)
      expect((await outside.json()).request_id).toBe(outside.headers.get('x-request-id'))

      expect((await fetch(`${s.apiUrl}/metrics`)).status).toBe(401)
      const metrics = await fetch(`${s.apiUrl}/metrics`, { headers: { 'X-Admin-Key': 'start-test-key' } })
      expect(metrics.status).toBe(200)
      expect(await metrics.text()).toContain('http_requests_total')
      const withKey = await fetch(`${s.apiUrl}/metrics/json`, { headers: { Authorization: `Bearer ${s.serviceKey}` } })
      expect(withKey.status).toBe(200)

      const sql = postgres(s.dbUrl, { max: 1 })
      const [row] = await sql`select count(*)::int as n from supabase_migrations.schema_migrations`
      await sql.end()
      expect(row!.n).toBeGreaterThan(0)
      // the database port asks for the data folder's password (made on the first start, its owner's only)
      const password = (await readFile(join(dataDir, 'db-password'), 'utf8')).trim()
      expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/)
      expect(decodeURIComponent(new URL(s.dbUrl).password)).toBe(password)
      expect((await stat(join(dataDir, 'db-password'))).mode & 0o777).toBe(0o600)
      for (const wrong of ['postgres', '']) {
        const url = new URL(s.dbUrl)
        url.password = wrong
        const guess = postgres(url.toString(), { max: 1, onnotice: () => {} })
        await expect(guess`select 1`).rejects.toMatchObject({ code: '28P01' })
        await guess.end({ timeout: 1 }).catch(() => {})
      }

      // the keys are signed with the folder's own JWT secret (made on the first start, its owner's only),
      // not the published default: a service-role token anyone can sign with that tops nobody up
      const secret = (await readFile(join(dataDir, 'jwt-secret'), 'utf8')).trim()
      expect(secret).toMatch(/^[A-Za-z0-9_-]{64}$/)
      expect((await stat(join(dataDir, 'jwt-secret'))).mode & 0o777).toBe(0o600)
      expect(s.serviceKey).toBe(await apiKey(secret, 'service_role'))
      expect(s.anonKey).toBe(await apiKey(secret, 'anon'))
      const forged = { Authorization: `Bearer ${await apiKey(LOCAL_JWT_SECRET, 'service_role')}`, 'Content-Type': 'application/json' }
      const student = signUp.data.user!.id
      const topUp = await fetch(`${s.apiUrl}/wallet/topup`, {
        method: 'POST',
        headers: forged,
        body: JSON.stringify({ user_id: student, tokens: 1_000_000, amount: 0, currency: 'MRU', payment_method: 'cash' }),
      })
      expect(topUp.status).toBe(401)
      expect((await fetch(`${s.apiUrl}/metrics/json`, { headers: forged })).status).toBe(401)
      const rest = await fetch(`${s.baseUrl}/rest/v1/rpc/top_up`, {
        method: 'POST',
        headers: { ...forged, apikey: s.anonKey },
        body: JSON.stringify({
          p_user: student,
          p_tokens: 1_000_000,
          p_amount: 0,
          p_currency: 'MRU',
          p_payment_method: 'cash',
          p_reference: null,
          p_created_by: 'x',
        }),
      })
      expect(rest.status).toBe(401)
      const topUpWithKey = await fetch(`${s.apiUrl}/wallet/topup`, {
        method: 'POST',
        headers: { ...forged, Authorization: `Bearer ${s.serviceKey}` },
        body: JSON.stringify({ user_id: student, tokens: 10, amount: 0, currency: 'MRU', payment_method: 'cash' }),
      })
      expect(topUpWithKey.status).toBe(201)
    } finally {
      const code = await stop(s)
      expect(code, s.output()).toBe(0)
    }
    expect(s.output()).toContain('"message":"stopped"')

    // the data survived: a second start applies no shim and no migration
    const again = await start({ DATA_DIR: dataDir })
    try {
      expect(again.output()).toContain('"shim_applied":false,"applied":[]')
      // the folder keeps its database password
      expect(decodeURIComponent(new URL(again.dbUrl).password)).toBe((await readFile(join(dataDir, 'db-password'), 'utf8')).trim())
      // and its JWT secret: the keys an app was given still work
      expect(again.anonKey).toBe(s.anonKey)
      expect(again.serviceKey).toBe(s.serviceKey)
    } finally {
      expect(await stop(again)).toBe(0)
    }
  }, 120_000)

  it('refuses to start with a bad setting and names it', async () => {
    const child = spawn(node, ['scripts/start.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', RATE_LIMIT_CHAT_PER_MINUTE: 'ten' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(2)
    expect(err).toContain('RATE_LIMIT_CHAT_PER_MINUTE')
  })
})

/** Runs a program of the stack to its end; its exit code and everything it printed. */
async function run(script: string, env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(node, [script, ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, out, err }
}

/** A port that something is listening on (for the taken-port cases). */
async function takenPort(): Promise<{ port: number; close: () => void }> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { port: (server.address() as { port: number }).port, close: () => server.close() }
}

/** One line naming the problem, no stack trace. */
function expectSentence(err: string, ...parts: (string | RegExp)[]) {
  const lines = err.trim().split('\n')
  expect(lines, err).toHaveLength(1)
  expect(err).not.toMatch(/^\s+at /m)
  for (const p of parts) expect(err).toMatch(p)
}

describe('the data directory lock', () => {
  it('lets one process have a folder: a second start exits 1 naming the folder and the PID, touching nothing', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ct-lock-'))
    dirs.push(dataDir)
    const first = await start({ DATA_DIR: dataDir })
    try {
      const before = (await readdir(dataDir)).sort()
      const lock = await readFile(join(dataDir, LOCK_FILE), 'utf8')
      expect(lock.split('\n')[0]).toBe(String(first.child.pid))
      const second = await run('scripts/start.ts', { DATA_DIR: dataDir, PORT: '0', DB_PORT: '0' })
      expect(second.code).toBe(1)
      expectSentence(second.err, dataDir, `process ${first.child.pid}`, /DATA_DIR/)
      expect(second.out).not.toContain('database migrated')
      expect((await readdir(dataDir)).sort()).toEqual(before)
      expect(await readFile(join(dataDir, LOCK_FILE), 'utf8')).toBe(lock)
      // the first is unharmed
      expect((await fetch(`${first.apiUrl}/health`)).status).toBe(200)
    } finally {
      expect(await stop(first)).toBe(0)
    }
    // released on a clean stop
    expect(await readdir(dataDir)).not.toContain(LOCK_FILE)
  }, 120_000)

  it('takes over a stale lock: its process is gone, or its PID now belongs to another process', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ct-lock-'))
    dirs.push(dataDir)
    const gone = spawn(node, ['-e', '0'])
    await new Promise((r) => gone.once('exit', r))
    await writeFile(join(dataDir, LOCK_FILE), `${gone.pid}\n123\n${hostname()}\n`)
    const lock = await lockDataDir(dataDir)
    await lock.release()
    // a live PID whose start time is not the recorded one: reused
    await writeFile(join(dataDir, LOCK_FILE), `${process.ppid}\n1\n${hostname()}\n`)
    const again = await lockDataDir(dataDir)
    // the same folder twice in one process is refused
    await expect(lockDataDir(dataDir)).rejects.toBeInstanceOf(DataDirLockedError)
    await again.release()
    // a live process's lock is respected
    const live = spawn(node, ['-e', 'setTimeout(() => {}, 30000)'])
    try {
      const stat = (await readFile(`/proc/${live.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ')[19]
      await writeFile(join(dataDir, LOCK_FILE), `${live.pid}\n${stat}\n${hostname()}\n`)
      await expect(lockDataDir(dataDir)).rejects.toThrow(`in use by process ${live.pid}`)
    } finally {
      live.kill()
    }
  })
})

describe('startup failures are one sentence and exit 1', () => {
  it('the published JWT_SECRET on an interface other machines reach', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ct-secret-'))
    dirs.push(dataDir)
    // set on purpose: without JWT_SECRET the stack signs with its data folder's own secret
    const exposed = await run('scripts/start.ts', { DATA_DIR: dataDir, HOST: '0.0.0.0', PORT: '0', DB_PORT: '0', JWT_SECRET: LOCAL_JWT_SECRET })
    expect(exposed.code).toBe(1)
    expectSentence(exposed.err, 'JWT_SECRET', /HOST=0\.0\.0\.0/, /set JWT_SECRET/)
    // found before the database is opened
    expect((await readdir(dataDir)).filter((f) => f !== LOCK_FILE)).toEqual([])
  })

  it('a taken PORT or DB_PORT', async () => {
    const taken = await takenPort()
    try {
      const dataDir = await mkdtemp(join(tmpdir(), 'ct-port-'))
      dirs.push(dataDir)
      const gateway = await run('scripts/start.ts', { DATA_DIR: dataDir, PORT: String(taken.port), DB_PORT: '0' })
      expect(gateway.code).toBe(1)
      expectSentence(gateway.err, `port ${taken.port}`, /already in use/, /set PORT/)
      // found before the database is opened: the new folder holds nothing (no database was created in it)
      expect((await readdir(dataDir)).filter((f) => f !== LOCK_FILE)).toEqual([])
      const db = await run('scripts/start.ts', { DATA_DIR: dataDir, PORT: '0', DB_PORT: String(taken.port) })
      expect(db.code).toBe(1)
      expectSentence(db.err, `port ${taken.port}`, /embedded database/, /set DB_PORT/)
      // both released the folder
      expect(await readdir(dataDir)).not.toContain(LOCK_FILE)
    } finally {
      taken.close()
    }
  }, 60_000)

  it('an unreachable DATABASE_URL, for the stack and the worker; the worker with no stack running', async () => {
    const closed = await takenPort()
    closed.close()
    const url = `postgres://app:s3cret@127.0.0.1:${closed.port}/db`
    const stack = await run('scripts/start.ts', { DATABASE_URL: url, PORT: '0' })
    expect(stack.code).toBe(1)
    expectSentence(stack.err, `postgres://app:***@127.0.0.1:${closed.port}/db`, /connection refused/, /DATABASE_URL/)
    expect(stack.err).not.toContain('s3cret')
    const worker = await run('scripts/worker.ts', { DB_PORT: String(closed.port) }, ['--once'])
    expect(worker.code).toBe(1)
    expectSentence(worker.err, /connection refused/, /npm start/)
  }, 60_000)

  it('a DATABASE_URL whose port is another server (an HTTP server that answers and hangs up): one sentence, not a hang', async () => {
    const http = createHttpServer((_req, res) => res.end('not a database'))
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
    try {
      const port = (http.address() as AddressInfo).port
      const started = Date.now()
      const stack = await run('scripts/start.ts', { DATABASE_URL: `postgres://app:s3cret@127.0.0.1:${port}/db`, PORT: '0' })
      expect(stack.code).toBe(1)
      expectSentence(stack.err, `postgres://app:***@127.0.0.1:${port}/db`, /is not PostgreSQL: it answered "HTTP\/1\.1 400/, /DATABASE_URL/)
      expect(Date.now() - started).toBeLessThan(30_000)
    } finally {
      http.close()
    }
  }, 60_000)

  it('npm run demo against a DEMO_URL where nothing answers names the URL', async () => {
    const closed = await takenPort()
    closed.close()
    const demo = await run('scripts/demo.ts', { DEMO_URL: `http://127.0.0.1:${closed.port}` })
    expect(demo.code).toBe(1)
    expectSentence(demo.err, `http://127.0.0.1:${closed.port}`, /npm start/)
  }, 60_000)
})
