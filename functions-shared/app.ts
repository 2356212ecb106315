// Builds the Hono app: cross-cutting middleware, then each top-level path's router at its base path.
// The Node gateway serves it under /functions/v1; each Supabase Edge Function serves one router.
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Deps } from './deps.ts'
import { publicUrl } from './config.ts'
import { validationHook } from './http/router.ts'
import { withCommonMiddleware } from './http/shell.ts'
import { healthRouter } from './health/routes.ts'
import { metricsRouter } from './metrics/routes.ts'
import { docsRouter } from './docs/routes.ts'
import { authRouter } from './identity/auth-routes.ts'
import { meRouter } from './identity/me-routes.ts'
import { adminRouter } from './admin/routes.ts'
import { walletRouter } from './wallet/routes.ts'
import { scrapingRouter } from './catalogue/routes.ts'
import { curriculumRouter } from './curriculum/routes.ts'
import { chatRouter } from './chat/routes.ts'
import { SERVICE_NAME, VERSION } from './version.ts'

export { withCommonMiddleware }

type RouterFactory = (deps: Deps) => OpenAPIHono

/** Each top-level path of the spec, its router, mounted at /<name>. */
export const ROUTERS = {
  health: healthRouter,
  auth: authRouter,
  me: meRouter,
  chat: chatRouter,
  wallet: walletRouter,
  admin: adminRouter,
  curriculum: curriculumRouter,
  scraping: scrapingRouter,
  metrics: metricsRouter,
  docs: (deps: Deps) => docsRouter(deps, () => openApiDocument(deps)),
} satisfies Record<string, RouterFactory>

export type RouterName = keyof typeof ROUTERS
export const ROUTER_NAMES = Object.keys(ROUTERS) as RouterName[]

export interface AppOptions {
  /** routers to mount (default: all) */
  routers?: readonly RouterName[]
  /** '' for an Edge Function (it sees /<name>/...), '/functions/v1' for the local gateway */
  basePath?: string
}

export function createApp(deps: Deps, options: AppOptions = {}): OpenAPIHono {
  const base = options.basePath ?? ''
  return withCommonMiddleware(new OpenAPIHono({ defaultHook: validationHook }), deps, (app) => {
    for (const name of options.routers ?? ROUTER_NAMES) app.route(`${base}/${name}`, ROUTERS[name](deps))
  })
}

const documents = new WeakMap<Deps, unknown>()

/** The OpenAPI 3.1 document of every router, built once per deps from the same route definitions. */
export function openApiDocument(deps: Deps): unknown {
  let doc = documents.get(deps)
  if (!doc) {
    const app = createApp(deps)
    app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'Access token from POST /auth/signin (Supabase Auth); admin routes need app_metadata.role = admin or a service-role key',
    })
    app.openAPIRegistry.registerComponent('securitySchemes', 'adminKey', {
      type: 'apiKey',
      in: 'header',
      name: 'X-Admin-Key',
      description: 'Deprecated: the ADMIN_API_KEY setting; accepted on admin routes with a Deprecation header',
    })
    doc = app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: SERVICE_NAME,
        version: VERSION,
        description: 'Curriculum tutoring backend: accounts, curriculum catalogue, AI teacher chat, token wallet and administration.',
      },
      servers: [{ url: `${deps.config.SUPABASE_URL ?? publicUrl(deps.config)}/functions/v1` }],
    })
    documents.set(deps, doc)
  }
  return doc
}
