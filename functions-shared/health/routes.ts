// GET /health: the service's status, version and whether the database answers.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { jsonContent } from '../http/schemas.ts'
import { VERSION } from '../version.ts'

const HealthSchema = z
  .object({
    status: z.enum(['ok', 'degraded']).openapi({ description: 'ok when every dependency answers' }),
    version: z.string(),
    time: z.string().openapi({ format: 'date-time' }),
    database: z.object({ reachable: z.boolean(), latency_ms: z.number().nullable() }),
  })
  .openapi('Health')

const route = createRoute({
  method: 'get',
  path: '/',
  tags: ['general'],
  summary: 'Service health',
  responses: {
    200: jsonContent(HealthSchema, 'The service and its database are up'),
    503: jsonContent(HealthSchema, 'The database does not answer'),
  },
})

async function databaseReachable(deps: Deps, timeoutMs: number): Promise<{ reachable: boolean; latency_ms: number | null }> {
  const started = performance.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)))
  try {
    await Promise.race([deps.sql`select 1`, timeout])
    return { reachable: true, latency_ms: Math.round((performance.now() - started) * 10) / 10 }
  } catch {
    return { reachable: false, latency_ms: null }
  } finally {
    clearTimeout(timer)
  }
}

export function healthRouter(deps: Deps) {
  return createRouter().openapi(route, async (c) => {
    const database = await databaseReachable(deps, 2000)
    const body = { status: database.reachable ? ('ok' as const) : ('degraded' as const), version: VERSION, time: new Date(deps.clock.now()).toISOString(), database }
    if (!database.reachable) c.get('log').warn({ database }, 'health check: database unreachable')
    return database.reachable ? c.json(body, 200) : c.json(body, 503)
  })
}
