// `npm start` end to end: the real process, the embedded database on disk, the printed URLs and keys.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname
const node = `${root}node_modules/.bin/node`
const dirs: string[] = []
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))))

interface Started {
  child: ChildProcess
  output: () => string
  apiUrl: string
  dbUrl: string
  serviceKey: string
}

async function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(node, ['scripts/start.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', DB_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s: ${output}`)), 60_000)
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)))
    child.stdout!.on('data', () => {
      if (output.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  const line = (label: string) => new RegExp(`^\\s+${label}\\s+(\\S+)$`, 'm').exec(output)?.[1] ?? ''
  return { child, output: () => output, apiUrl: line('API URL'), dbUrl: line('Database URL'), serviceKey: line('service_role key') }
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
      expect(s.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/functions\/v1$/)
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
    } finally {
      const code = await stop(s)
      expect(code, s.output()).toBe(0)
    }
    expect(s.output()).toContain('"message":"stopped"')

    // the data survived: a second start applies no shim and no migration
    const again = await start({ DATA_DIR: dataDir })
    try {
      expect(again.output()).toContain('"shim_applied":false,"applied":[]')
    } finally {
      expect(await stop(again)).toBe(0)
    }
  }, 120_000)

  it('refuses to start with a bad setting and names it', async () => {
    const child = spawn(node, ['scripts/start.ts'], { cwd: root, env: { PATH: process.env.PATH ?? '', RATE_LIMIT_CHAT_PER_MINUTE: 'ten' }, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    const code = await new Promise((resolve) => child.once('exit', resolve))
    expect(code).toBe(2)
    expect(err).toContain('RATE_LIMIT_CHAT_PER_MINUTE')
  })
})
