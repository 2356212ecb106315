// The Edge Functions really run on Deno: every entry type-checks, and the health function answers.
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { promisify } from 'node:util'
import { readdirSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { ROUTER_NAMES } from '../functions-shared/app.ts'

const root = new URL('..', import.meta.url).pathname
const deno = `${root}node_modules/.bin/deno`
const entries = readdirSync(`${root}supabase/functions`).filter((d) => !d.startsWith('_')).sort()

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
    s.once('error', reject)
  })
}

describe('Edge Functions on Deno', () => {
  it('has one entry per router', () => {
    expect(entries).toEqual([...ROUTER_NAMES].sort())
  })

  it('type-checks every function entry with deno check', async () => {
    const { stdout, stderr } = await promisify(execFile)(deno, ['check', ...entries.map((e) => `supabase/functions/${e}/index.ts`)], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1' },
    })
    expect(`${stdout}${stderr}`).not.toMatch(/error/i)
  }, 120_000)

  it('loads at start only the packages its function uses: supabase-js in auth and admin; the OpenAI SDK and pdf.js on first use', async () => {
    // the packages each entry imports statically (deno info's module graph, dynamic imports apart): what a cold start pays for
    const packagesOf = async (entry: string) => {
      const { stdout } = await promisify(execFile)(deno, ['info', '--json', `supabase/functions/${entry}/index.ts`], { cwd: root, maxBuffer: 64 << 20 })
      const graph = JSON.parse(stdout) as { modules: { dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[] }[] }
      const packages = new Set<string>()
      for (const m of graph.modules) {
        for (const d of m.dependencies ?? []) {
          const at = d.code && !d.isDynamic ? d.code.specifier.split('/node_modules/')[1] : undefined
          if (at) packages.add(at.startsWith('@') ? at.split('/').slice(0, 2).join('/') : at.split('/')[0]!)
        }
      }
      return packages
    }
    const loaded = Object.fromEntries(await Promise.all(entries.map(async (e) => [e, await packagesOf(e)] as const)))
    for (const e of entries) {
      expect(loaded[e]!.has('openai'), `${e} loads the OpenAI SDK at start`).toBe(false)
      expect(loaded[e]!.has('pdfjs-dist'), `${e} loads pdf.js at start`).toBe(false)
      expect(loaded[e]!.has('@supabase/supabase-js'), `${e} and supabase-js`).toBe(['admin', 'auth'].includes(e))
    }
    // the shell and its router: the token verifier (jose) and the chat's caches (lru-cache) are made only where a route uses them
    expect([...loaded.health!].sort()).toEqual(['@hono/zod-openapi', 'hono', 'ipaddr.js', 'pino', 'postgres', 'prom-client', 'zod'])
    expect(loaded.scraping!.has('cheerio')).toBe(true)
    expect(loaded.chat!.has('cheerio')).toBe(false)
  }, 120_000)

  it('serves GET /health with 200 from the health function under Deno, on the test database', async () => {
    const port = await freePort()
    const child = spawn(deno, ['run', '--allow-net', '--allow-env', '--allow-read', '--allow-sys', 'supabase/functions/health/index.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        NO_COLOR: '1',
        FUNCTION_PORT: String(port),
        SUPABASE_DB_URL: db.url,
        DB_POOL_MAX: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`Deno did not start: ${output}`)), 60_000)
        child.once('exit', (code) => reject(new Error(`Deno exited with ${code}: ${output}`)))
        const ready = () => {
          if (output.includes('Listening on')) {
            clearTimeout(timer)
            resolve()
          }
        }
        child.stdout.on('data', ready)
        child.stderr.on('data', ready)
      })
      const res = await fetch(`http://127.0.0.1:${port}/health`, { headers: { 'x-request-id': 'deno-health' } })
      const body = (await res.json()) as Record<string, unknown>
      expect(res.status, JSON.stringify(body)).toBe(200)
      expect(body).toMatchObject({ status: 'ok', database: { reachable: true } })
      expect(res.headers.get('x-request-id')).toBe('deno-health')
      const missing = await fetch(`http://127.0.0.1:${port}/chat`)
      expect(missing.status).toBe(404)
      // the JSON access log line came out of Deno too
      expect(output).toContain('"request_id":"deno-health"')
    } finally {
      child.kill('SIGTERM')
    }
  }, 90_000)
})
