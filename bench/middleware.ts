// Cost of the cross-cutting middleware and of the rate-limit stores, against baselines measured in the
// same run: a bare Hono route, and the in-memory store. Prints figures and ratios; asserts nothing.
// Run: npm run bench   (embedded PGlite; set BENCH_DATABASE_URL to use a PostgreSQL server)
import { Hono } from 'hono'
import { OpenAPIHono } from '@hono/zod-openapi'
import { loadConfig } from '../functions-shared/config.ts'
import { createDeps } from '../functions-shared/deps.ts'
import { createApp, withCommonMiddleware } from '../functions-shared/app.ts'
import { createRouter } from '../functions-shared/http/router.ts'
import { createDb } from '../functions-shared/db/client.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { MemoryRateLimitStore } from '../functions-shared/http/rate-limit/memory-store.ts'
import { PostgresRateLimitStore } from '../functions-shared/http/rate-limit/postgres-store.ts'
import { startEmbedded } from '../scripts/lib/embedded-db.ts'
import { migrateRepository } from '../scripts/lib/migrations.ts'
import { databaseLabel } from './lib/scratch-db.ts'
import { machine } from './lib/machine.ts'

async function measure(label: string, n: number, fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < Math.min(200, n); i++) await fn(i) // warm-up
  const started = performance.now()
  for (let i = 0; i < n; i++) await fn(i)
  const perSecond = n / ((performance.now() - started) / 1000)
  console.log(`${label.padEnd(58)} ${perSecond.toFixed(0).padStart(9)} ops/s`)
  return perSecond
}

const embedded = process.env.BENCH_DATABASE_URL ? undefined : await startEmbedded({ port: 0 })
const sql = createDb(process.env.BENCH_DATABASE_URL ?? embedded!.url, { max: 1, prepare: true })
await migrateRepository(sql)
const config = loadConfig({ LOG_LEVEL: 'silent', ADMIN_API_KEY: 'bench-key', RATE_LIMIT_ADMIN_PER_MINUTE: '100000000' })
const deps = createDeps(config, { sql, logs: createLogRoot({ level: 'silent' }) })

machine(await databaseLabel(sql, embedded ? 'pglite' : 'server'))
console.log('')

const bare = new Hono().get('/ping', (c) => c.json({ ok: true }))
const base = await measure('baseline: bare Hono route, app.request', 20_000, () => bare.request('/ping'))

const ping = createRouter()
ping.get('/ping', (c) => c.json({ ok: true }))
const wrapped = withCommonMiddleware(new OpenAPIHono(), deps, (a) => a.route('/', ping))
const mw = await measure('same route behind request id, logs, metrics, CORS, body limit', 20_000, () => wrapped.request('/ping'))

const app = createApp(deps)
const service = await apiKey(config.JWT_SECRET, 'service_role')
const metrics = await measure(
  'GET /metrics (JWT verify, admin rate limit, render)',
  3_000,
  () => app.request('/metrics', { headers: { Authorization: `Bearer ${service}` } }),
)
const health = await measure('GET /health (one database round trip)', 3_000, () => app.request('/health'))

console.log('')
const memory = new MemoryRateLimitStore()
const mem = await measure('rate limit, memory store (1000 keys)', 50_000, (i) => memory.hit(`k${i % 1000}`, 60, 60_000, Date.now()))
const pgStore = new PostgresRateLimitStore(sql)
const pg = await measure('rate limit, postgres store (1000 keys)', 3_000, (i) => pgStore.hit(`k${i % 1000}`, 60, 60_000, Date.now()))

console.log(`
ratios
  middleware stack / bare route          ${(base / mw).toFixed(2)}x the time per request
  admin route with JWT / bare route      ${(base / metrics).toFixed(2)}x
  health with database / bare route      ${(base / health).toFixed(2)}x
  postgres store / memory store          ${(mem / pg).toFixed(1)}x the time per check`)

await sql.end()
await embedded?.close()
