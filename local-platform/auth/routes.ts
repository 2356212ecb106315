// The local GoTrue-compatible auth server, served under /auth/v1 by the Node gateway in the embedded
// and server-PostgreSQL modes (on Supabase, Supabase Auth serves these paths). It implements what
// supabase-js uses, faithfully: sign-up, password and refresh-token grants, get/update user, logout,
// recover (user-routes.ts); what goes through a mailbox (mail-flows.ts: confirmation, magic links and codes,
// verify, resend, invite, generate_link, reauthenticate; mailbox.ts keeps the mail); the admin user
// endpoints (admin-routes.ts); TOTP factors (mfa.ts).
import { Hono } from 'hono'
import type { Deps } from '../../functions-shared/deps.ts'
import { goTrueErrorResponse } from './errors.ts'
import { authKit, checkText } from './kit.ts'
import { userRoutes } from './user-routes.ts'
import { adminRoutes } from './admin-routes.ts'
import { mailFlows } from './mail-flows.ts'
import { disabledFeatures } from './disabled-features.ts'
import { mfaRoutes } from './mfa.ts'

export function localAuthRouter(deps: Deps): Hono {
  const app = new Hono()
  const kit = authKit(deps)
  app.use('*', async function queryText(c, next) {
    checkText(c.req.queries())
    await next()
  })
  const flows = mailFlows(app, deps, kit)
  userRoutes(app, deps, kit, flows)
  adminRoutes(app, deps, kit)
  mfaRoutes(app, deps, kit)
  disabledFeatures(app, kit)
  // an unknown path, as GoTrue's router answers it
  app.notFound((c) => c.text('404 page not found', 404))
  app.onError(goTrueErrorResponse)
  return app
}
