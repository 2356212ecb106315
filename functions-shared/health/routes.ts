// GET /health: the service's status, version, whether the database answers, and whether the service can
// run a query as each of its own roles (service_role, and authenticated with a user's claims), as every
// request does: a database whose session was tampered with answers, but not as it should.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { jsonContent } from '../http/schemas.ts'
import { VERSION } from '../version.ts'
import { asService, asUser } from '../db/tx.ts'

const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).openapi({ description: 'ok when every dependency answers' }),
    version: z.string(),
    time: z.string().openapi({ format: 'date-time' }),
    database: z.object({
      reachable: z.boolean(),
      roles: z.boolean().openapi({ description: "a query runs as service_role, and as authenticated with a user's claims" }),
      latency_ms: z.number().nullable(),
    }),
  })
  .openapi('Health')

const route = createRoute({
  method: 'get',
  path: '/',
  tags: ['general'],
  summary: 'Service health',
  responses: {
    200: jsonContent(HealthSchema, 'The service and its database are up'),
    503: jsonContent(HealthSchema, "The database does not answer, or not as the service's roles"),
  },
})

const PROBE_USER = '00000000-0000-4000-8000-000000000000'

/** One query as each role the service uses; true when each ran as that role with those claims. */
async function runsAsOwnRoles(deps: Deps): Promise<boolean> {
  const [service] = await asService(deps.sql, (tx) => tx<{ role: string }[]>`select current_user as role`)
  const [user] = await asUser(deps.sql, { sub: PROBE_USER }, (tx) => tx<{ role: string; uid: string | null }[]>`select current_user as role, auth.uid() as uid`)
  return service?.role === 'service_role' && user?.role === 'authenticated' && user?.uid === PROBE_USER
}

async function checkDatabase(deps: Deps, timeoutMs: number): Promise<{ reachable: boolean; roles: boolean; latency_ms: number | null }> {
  const started = performance.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)))
  try {
    await Promise.race([deps.sql`select 1`, timeout])
    const latency = Math.round((performance.now() - started) * 10) / 10
    const roles = await Promise.race([runsAsOwnRoles(deps), timeout]).catch(() => false)
    return { reachable: true, roles, latency_ms: latency }
  } catch {
    return { reachable: false, roles: false, latency_ms: null }
  } finally {
    clearTimeout(timer)
  }
}

export function healthRouter(deps: Deps) {
  // One check at a time: a request that comes while one runs gets its answer (begun at most its 2 s
  // before), not a check of its own. Every check is three round trips to the database, two of them
  // transactions; 32 connections asking for /health, unlimited, queued 32 checks at once on the session
  // that serves every other request.
  let running: Promise<Awaited<ReturnType<typeof checkDatabase>>> | null = null
  const check = () => {
    if (!running) running = checkDatabase(deps, 2000).finally(() => (running = null))
    return running
  }
  return createRouter().openapi(route, async (c) => {
    const database = await check()
    const ok = database.reachable && database.roles
    const body = { status: ok ? ('ok' as const) : ('degraded' as const), version: VERSION, time: new Date(deps.clock.now()).toISOString(), database }
    if (!ok) {
      c.get('log').warn({ database }, database.reachable ? "health check: queries do not run as the service's roles" : 'health check: database unreachable')
    }
    return ok ? c.json(body, 200) : c.json(body, 503)
  })
}
