// Request id (adopted when sane, otherwise a UUID), the per-request logger, and the access log line.
import type { MiddlewareHandler } from 'hono'
import type { LogRoot } from '../lib/logger.ts'
import type { Clock } from '../lib/clock.ts'
import type { Metrics } from '../lib/metrics.ts'
import './context.ts'

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export function pickRequestId(header: string | undefined): string {
  return header && SANE_REQUEST_ID.test(header) ? header : crypto.randomUUID()
}

/** The route pattern that matched, so metrics and logs never carry raw ids. */
function routeOf(routePath: string | undefined, status: number): string {
  if (!routePath || routePath === '*' || routePath === '/*' || status === 404) return status === 404 ? 'unmatched' : routePath ?? 'unmatched'
  return routePath
}

export function requestContext(options: { logs: LogRoot; metrics: Metrics; clock?: Clock }): MiddlewareHandler {
  const { logs, metrics } = options
  return async function requestContext(c, next) {
    const started = performance.now()
    const requestId = pickRequestId(c.req.header('x-request-id'))
    c.set('requestId', requestId)
    c.set('log', logs.forRequest('http', requestId))
    try {
      await next()
    } finally {
      c.header('X-Request-ID', requestId)
      const status = c.res.status
      const route = routeOf(c.req.routePath, status)
      const seconds = (performance.now() - started) / 1000
      metrics.observeRequest(c.req.method, route, status, seconds)
      c.get('log').info(
        { method: c.req.method, route, path: new URL(c.req.url).pathname, status, duration_ms: Math.round(seconds * 1e4) / 10 },
        'request completed',
      )
    }
  }
}
