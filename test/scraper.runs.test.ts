// A scrape run's heartbeat: a run whose process died mid-sync is closed as failed once it has made no
// progress for SCRAPE_RUN_STALE_SECONDS, while a live run is never closed, however long it takes. Time
// passes on the app's fake clock (the one the sync writes its heartbeats with); nothing waits.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { bearer } from './helpers/tokens.ts'
import { AR_LESSON, FR_LESSON, PHYSICS_LESSON } from './helpers/portal.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { type Source, SourceSchema } from '../functions-shared/sources-file.ts'
import { syncSource } from '../functions-shared/catalogue/sync.ts'
import { closeRunsLeftRunning } from '../functions-shared/catalogue/listings.ts'
import type { Sql } from '../functions-shared/db/client.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { connectGuardNode, resolveHostNode } from '../scripts/lib/node-adapter.ts'

const STALE_SECONDS = 60

let db: TestDatabase
let t: TestApp
let server: Server
let base: string
let service: Record<string, string>
/** called as each listing page or PDF is asked for, before it is sent */
let beforeServe: ((path: string) => Promise<void>) | null = null

beforeAll(async () => {
  db = await createTestDatabase()
  const pdfs = new Map([
    ['/a.pdf', await makePdf([FR_LESSON])],
    ['/b.pdf', await makePdf([PHYSICS_LESSON, PHYSICS_LESSON])],
    ['/c.pdf', await makePdf([AR_LESSON], { arabic: true })],
  ])
  // each source has a listing of its own (/<source>/index.html), so that no sync finds another's PDFs known
  const listing = `<!doctype html><html><body><ul>${[...pdfs.keys()].map((p) => `<li><a href="${p.slice(1)}">${p}</a></li>`).join('')}</ul></body></html>`
  server = createServer((req, res) => {
    const path = new URL(req.url!, 'http://portal').pathname
    const pdf = pdfs.get(path.replace(/^\/[a-z]+/, ''))
    if (!pdf && !path.endsWith('.html')) return res.writeHead(404).end()
    void (async () => {
      await beforeServe?.(path)
      if (pdf) res.writeHead(200, { 'content-type': 'application/pdf' }).end(pdf)
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(listing)
    })()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t = createTestApp({
    sql: db.sql,
    env: {
      FETCH_ALLOW_LOOPBACK: 'true',
      SCRAPE_RUN_STALE_SECONDS: String(STALE_SECONDS),
      RATE_LIMIT_ADMIN_PER_MINUTE: '1000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000',
      LOG_LEVEL: 'warn',
    },
    deps: {
      sources: [source('killed'), source('restarted'), source('alive', 3), source('busy'), source('other'), source('held'), source('stopped'), source('left')],
      resolveHost: resolveHostNode,
      connectGuard: connectGuardNode,
    },
  })
  service = bearer(await apiKey(LOCAL_JWT_SECRET, 'service_role'))
})
afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
  await db?.close()
})

/** A source whose listing is `pages` pages (each listing the same three PDFs). */
function source(name: string, pages = 1): Source {
  const indexUrls = Array.from({ length: pages }, (_, i) => `${base}/${name}/page${i + 1}.html`)
  return SourceSchema.parse({ name, index_urls: indexUrls, allowed_hosts: [new URL(base).host] })
}

const runs = async (name: string) => {
  const res = await t.request(`/scraping/${name}/runs`)
  expect(res.status).toBe(200)
  return (await json(res)).items as Record<string, any>[]
}

/**
 * The database as a process sees it that is killed once `kill` is called: from then on nothing it sends
 * reaches the database, so its sync never writes the end of its run.
 */
function killable(sql: Sql) {
  let dead = false
  const proxy = new Proxy(sql, {
    get: (target, prop, receiver) => prop === 'begin' && dead ? () => Promise.reject(new Error('the process was killed')) : Reflect.get(target, prop, receiver),
  })
  return { sql: proxy, kill: () => void (dead = true) }
}

/** A sync of `name` whose process is killed as it asks for b.pdf: its run is left running, as it last reported it. */
async function killedSync(name: string) {
  const victim = killable(db.sql)
  beforeServe = async (path) => {
    if (path.endsWith('/b.pdf')) victim.kill()
  }
  try {
    const sync = syncSource({
      ctx: { deps: { ...t.deps, sql: victim.sql }, requestId: `killed-${name}` },
      input: t.deps.sources.find((s) => s.name === name)!,
    })
    await expect(sync).rejects.toThrow('the process was killed')
  } finally {
    beforeServe = null
  }
  const [run] = await db.sql`select id, status from public.scrape_runs where source = ${name} order by started_at desc limit 1`
  expect(run!.status).toBe('running')
  return run!.id as string
}

describe('a run whose process died mid-sync', () => {
  it('is listed as running until it has made no progress for SCRAPE_RUN_STALE_SECONDS, then closed as failed, saying so, with what it had done', async () => {
    const runId = await killedSync('killed')
    t.clock.advance(STALE_SECONDS * 1000)
    expect((await runs('killed'))[0]).toMatchObject({ id: runId, status: 'running', finished_at: null })
    t.clock.advance(1000)
    const [run] = await runs('killed')
    expect(run).toMatchObject({
      id: runId,
      status: 'failed',
      error_message: `abandoned: no progress for more than ${STALE_SECONDS} s (its process stopped before the run ended)`,
      finished_at: expect.any(String),
      // its last heartbeat, after a.pdf: the listing and one new reference
      found_count: 3,
      new_count: 1,
      errors: 1,
    })
    // the admin listing shows the same
    const all = await t.request('/admin/scrape-runs', { headers: service })
    expect(((await json(all)).items as { id: string; status: string }[]).find((r) => r.id === runId)).toMatchObject({ status: 'failed' })
  })

  it('is closed as interrupted when a process that alone holds the database starts (the embedded one), not left for the heartbeat', async () => {
    const dead = await killedSync('left')
    expect(await closeRunsLeftRunning(t.deps)).toBeGreaterThanOrEqual(1)
    const [run] = await db.sql`select status, error_message, finished_at from public.scrape_runs where id = ${dead}`
    expect(run).toMatchObject({ status: 'interrupted', error_message: expect.stringContaining('the process that ran it stopped before the run ended') })
    expect(run!.finished_at).not.toBeNull()
  })

  it('is closed as failed when the next sync starts', async () => {
    const runId = await killedSync('restarted')
    t.clock.advance((STALE_SECONDS + 1) * 1000)
    const next = await t.request('/scraping/restarted/sync', { method: 'POST', headers: service })
    expect(next.status).toBe(200)
    const [dead] = await db.sql`select status, error_message from public.scrape_runs where id = ${runId}`
    expect(dead).toMatchObject({ status: 'failed', error_message: expect.stringMatching(/^abandoned: no progress for more than 60 s/) })
    expect((await json(next)).status).toBe('completed')
  })
})

describe('a run that is alive', () => {
  it('is never closed while it advances, each listing page and link within SCRAPE_RUN_STALE_SECONDS, however long the whole run takes', async () => {
    const seen: string[] = []
    // each download (three listing pages, three PDFs) takes two thirds of SCRAPE_RUN_STALE_SECONDS, and
    // the runs are listed meanwhile
    beforeServe = async () => {
      t.clock.advance((STALE_SECONDS * 2000) / 3)
      seen.push(...(await runs('alive')).map((r) => r.status as string))
    }
    try {
      const res = await t.request('/scraping/alive/sync', { method: 'POST', headers: service })
      expect(res.status).toBe(200)
      expect(await json(res)).toMatchObject({ status: 'completed', found_count: 3 })
    } finally {
      beforeServe = null
    }
    // six downloads: four times SCRAPE_RUN_STALE_SECONDS in all
    expect(seen).toEqual(Array(6).fill('running'))
    const [run] = await runs('alive')
    expect(run).toMatchObject({ status: 'completed', error_message: null, found_count: 3 })
  })
})

describe('a source with a run that is running', () => {
  it('refuses a second sync of that source with 409 naming the running run, holds no other source, and syncs again once the run has ended', async () => {
    let second: Response | undefined
    let other: Response | undefined
    // while the first sync reads its listing page, the same source and another one are synced
    beforeServe = async (path) => {
      if (path !== '/busy/page1.html' || second) return
      second = await t.request('/scraping/busy/sync', { method: 'POST', headers: service })
      other = await t.request('/scraping/other/sync', { method: 'POST', headers: service })
    }
    let first: Response
    try {
      first = await t.request('/scraping/busy/sync', { method: 'POST', headers: service })
    } finally {
      beforeServe = null
    }
    expect(first.status).toBe(200)
    const firstRun = (await json(first)) as Record<string, any>
    expect(firstRun).toMatchObject({ status: 'completed', found_count: 3 })
    expect(second!.status).toBe(409)
    const refusal = (await json(second!)) as Record<string, any>
    expect(refusal).toMatchObject({ error: 'conflict', run_id: firstRun.run_id, request_id: expect.any(String) })
    expect(refusal.message).toMatch(new RegExp(`^A sync of busy is already running \\(run ${firstRun.run_id}, started `))
    expect(other!.status).toBe(200)
    expect(await json(other!)).toMatchObject({ source: 'other', status: 'completed' })
    // one run of the source was recorded, and the next sync starts one of its own
    expect((await runs('busy')).map((r) => r.id)).toEqual([firstRun.run_id])
    const next = await t.request('/scraping/busy/sync', { method: 'POST', headers: service })
    expect(next.status).toBe(200)
    expect(await json(next)).toMatchObject({ status: 'completed', known: 3 })
  })

  it('is not held by a run whose process died: the dead run is closed and the sync runs', async () => {
    const dead = await killedSync('held')
    const held = await t.request('/scraping/held/sync', { method: 'POST', headers: service })
    expect(held.status).toBe(409)
    expect(await json(held)).toMatchObject({ run_id: dead })
    t.clock.advance((STALE_SECONDS + 1) * 1000)
    const next = await t.request('/scraping/held/sync', { method: 'POST', headers: service })
    expect(next.status).toBe(200)
    const [closed] = await db.sql`select status from public.scrape_runs where id = ${dead}`
    expect(closed!.status).toBe('failed')
  })
})

describe('a sync when its process shuts down', () => {
  it('stops at the first link after the shutdown begins, closes its run as interrupted with what it did, says so once, and the next sync goes on', async () => {
    // the shutdown begins while the second PDF is being sent
    beforeServe = async (path) => {
      if (path === '/stopped/b.pdf') t.deps.background.stop()
    }
    const before = t.logs.lines.length
    try {
      const res = await t.request('/scraping/stopped/sync', { method: 'POST', headers: service })
      expect(res.status).toBe(200)
      const body = await json(res)
      expect(body).toMatchObject({ status: 'interrupted', found_count: 3 })
      // two links read (new, or copies of the other sources' lessons), the third left
      expect(body.new_count + body.duplicates + body.known + body.quality_failed + body.errors).toBe(2)
    } finally {
      beforeServe = null
    }
    const [run] = await runs('stopped')
    expect(run).toMatchObject({
      status: 'interrupted',
      found_count: 3,
      error_message: expect.stringContaining("interrupted by the service's shutdown after 2 of 3 links"),
    })
    expect(t.logs.lines.slice(before).filter((l) => /interrupted by the shutdown/.test(JSON.stringify(l)))).toHaveLength(1)
    expect(t.logs.lines.slice(before).filter((l) => /CONNECTION_ENDED|heartbeat not written/.test(JSON.stringify(l)))).toEqual([])
    // the next process's sync is not held by it, and reads the rest
    const next = createTestApp({
      sql: db.sql,
      env: { FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_ADMIN_PER_MINUTE: '1000', LOG_LEVEL: 'silent' },
      deps: { sources: [source('stopped')], resolveHost: resolveHostNode, connectGuard: connectGuardNode },
    })
    const again = await next.request('/scraping/stopped/sync', { method: 'POST', headers: service })
    expect(again.status).toBe(200)
    expect(await json(again)).toMatchObject({ status: 'completed', found_count: 3 })
  })
})
