// GET /metrics (Prometheus text) and GET /metrics/json (the same figures as JSON); admin only.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'

const text = createRoute({
  method: 'get',
  path: '/',
  tags: ['operations'],
  summary: 'Metrics in Prometheus text format',
  security: adminSecurity,
  responses: {
    200: { content: { 'text/plain': { schema: z.string() } }, description: 'Prometheus exposition format 0.0.4' },
    ...errorResponses.protected,
  },
})

const MetricSchema = z
  .object({
    name: z.string(),
    help: z.string(),
    type: z.string(),
    values: z.array(z.object({ value: z.number(), labels: z.record(z.string(), z.union([z.string(), z.number()])) }).passthrough()),
  })
  .passthrough()
  .openapi('Metric')

const json = createRoute({
  method: 'get',
  path: '/json',
  tags: ['operations'],
  summary: 'Metrics as JSON',
  security: adminSecurity,
  responses: {
    200: jsonContent(z.object({ metrics: z.array(MetricSchema) }), 'Every metric with its labelled values'),
    ...errorResponses.protected,
  },
})

export function metricsRouter(deps: Deps) {
  const { admin, limit } = guards(deps)
  const router = createRouter()
  router.use('*', admin, limit('admin'))
  const registry = deps.metrics.registry
  return router
    .openapi(text, async (c) => c.text(await registry.metrics(), 200, { 'Content-Type': registry.contentType }))
    .openapi(json, async (c) => c.json({ metrics: (await registry.getMetricsAsJSON()) as unknown as z.infer<typeof MetricSchema>[] }, 200))
}
