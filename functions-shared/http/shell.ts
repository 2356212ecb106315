// The shell every app is served in, the Node gateway's and each Edge Function's alike: request context
// (request id, access log, metrics), CORS, body limits in front; the JSON 404 and the one error handler
// behind. It imports no router, so an Edge Function that mounts one router loads only that router's code.
import { OpenAPIHono } from '@hono/zod-openapi'
import { cors } from 'hono/cors'
import { bodyLimit } from 'hono/body-limit'
import type { Context, MiddlewareHandler } from 'hono'
import type { Deps } from '../deps.ts'
import { requestContext } from './request-context.ts'
import { ApiError, ErrorCode, handleError, notFound } from './errors.ts'
import { validationHook } from './router.ts'

/** Paths whose multipart bodies may reach UPLOAD_MAX_BYTES; every other body gets BODY_LIMIT_BYTES. */
const UPLOAD_PATHS = ['/admin/upload-curriculum']

/** A body utf8Bodies reads whole before any route (and so before any authentication). */
const readBeforeRoute = (c: Context) => c.req.method !== 'GET' && c.req.method !== 'HEAD' && /json/i.test(c.req.header('content-type') ?? '')

function bodyLimits(deps: Deps): MiddlewareHandler {
  const onError = (c: Context): Response => {
    // a path served by another API (the local gateway's auth server) answers in its own shape
    const own = deps.foreignError?.(c, 413, 'request_too_large', 'Request body is too large')
    if (own) return own
    throw new ApiError(ErrorCode.PAYLOAD_TOO_LARGE, 'Request body is too large')
  }
  const small = bodyLimit({ maxSize: deps.config.BODY_LIMIT_BYTES, onError })
  const upload = bodyLimit({ maxSize: deps.config.UPLOAD_MAX_BYTES, onError })
  return async function bodyLimits(c, next) {
    const path = c.req.path
    // a JSON body is read before the route checks who sends it: on the upload's path it took up to
    // UPLOAD_MAX_BYTES of memory per connection from anyone, for a 401 (the upload takes multipart only)
    return (UPLOAD_PATHS.some((p) => path.endsWith(p)) && !readBeforeRoute(c) ? upload : small)(c, next)
  }
}

/**
 * A JSON body must be UTF-8: decoded leniently, its broken bytes would become U+FFFD and be stored and
 * billed as if the student had typed them. Refused instead (400), in the shape of the API whose path it is.
 */
function utf8Bodies(deps: Deps): MiddlewareHandler {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  return async function utf8Bodies(c, next) {
    if (readBeforeRoute(c)) {
      const body = await c.req.arrayBuffer() // a body past its limit fails here, as itself
      try {
        decoder.decode(body)
      } catch {
        const message = 'The request body is not valid UTF-8'
        const own = deps.foreignError?.(c, 400, 'bad_json', message)
        if (own) return own
        throw new ApiError(ErrorCode.BAD_REQUEST, message)
      }
    }
    await next()
  }
}

/** Request context, CORS and body limits in front; JSON 404 and the one error handler behind. */
export function withCommonMiddleware(app: OpenAPIHono, deps: Deps, mount: (app: OpenAPIHono) => void): OpenAPIHono {
  app.use('*', requestContext({ logs: deps.logs, metrics: deps.metrics }))
  app.use(
    '*',
    cors({
      origin: deps.config.CORS_ORIGIN,
      allowHeaders: [
        'authorization',
        'x-client-info',
        'apikey',
        'content-type',
        'x-request-id',
        'x-admin-key',
        'idempotency-key',
        'last-event-id',
        'x-retry-count',
        'x-supabase-api-version',
        'prefer',
        'range',
        'range-unit',
        'accept-profile',
        'content-profile',
      ],
      allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      exposeHeaders: [
        'X-Request-ID',
        'Retry-After',
        'Deprecation',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-Total-Count',
        'Link',
        'X-Supabase-Api-Version',
        'Content-Range',
        'X-Turn-Id',
        'X-Conversation-Id',
        'Idempotent-Replayed',
      ],
      maxAge: 86400,
    }),
  )
  app.use('*', bodyLimits(deps))
  app.use('*', utf8Bodies(deps))
  mount(app)
  app.notFound((c) => notFound(c, app.routes))
  app.onError(handleError)
  return app
}

/** One router at /<name> in the shell: what an Edge Function serves. */
export function createFunctionApp(deps: Deps, name: string, router: (deps: Deps) => OpenAPIHono): OpenAPIHono {
  return withCommonMiddleware(new OpenAPIHono({ defaultHook: validationHook }), deps, (app) => {
    app.route(`/${name}`, router(deps))
  })
}
