// Everything under /admin: admin credentials and the admin rate limit in front of every route.
import type { Deps } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { guards } from '../http/guards.ts'
import { adminUsersRouter } from './users-routes.ts'
import { adminCatalogueRouter } from './catalogue-routes.ts'
import { adminJobsRouter } from './jobs-routes.ts'
import { adminDocumentsRouter } from './documents-routes.ts'

export function adminRouter(deps: Deps) {
  const { admin, limit } = guards(deps)
  const router = createRouter()
  router.use('*', admin, limit('admin'))
  router.route('/', adminUsersRouter(deps))
  router.route('/', adminCatalogueRouter(deps))
  router.route('/', adminJobsRouter(deps))
  router.route('/', adminDocumentsRouter(deps))
  return router
}
