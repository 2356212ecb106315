// The local GoTrue-compatible auth server, served under /auth/v1 by the Node gateway in the embedded
// and server-PostgreSQL modes (on Supabase, Supabase Auth serves these paths). It implements what
// supabase-js uses, faithfully: sign-up, password and refresh-token grants, get/update user, logout,
// recover (+ verify) (user-routes.ts), and the admin user endpoints (admin-routes.ts).
import { Hono } from 'hono'
import type { Deps } from '../deps.ts'
import { goTrueErrorResponse } from './errors.ts'
import { authKit, checkText } from './kit.ts'
import { userRoutes } from './user-routes.ts'
import { adminRoutes } from './admin-routes.ts'

export function localAuthRouter(deps: Deps): Hono {
  const app = new Hono()
  const kit = authKit(deps)
  app.use('*', async function queryText(c, next) {
    checkText(c.req.queries())
    await next()
  })
  userRoutes(app, deps, kit)
  adminRoutes(app, deps, kit)
  app.onError(goTrueErrorResponse)
  return app
}
