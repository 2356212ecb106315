// Typed context variables, shared by every middleware and handler.
import type { Logger } from '../lib/logger.ts'
import type { Context } from 'hono'
import type { JWTPayload } from 'jose'
import type { Deps, ServiceContext } from '../deps.ts'
import type { ROLES } from '../domain/enums.ts'

/** A user's role, as the token's app_metadata.role says it. */
export type Role = (typeof ROLES)[number]

/** Who a request acts for: a user by their token, the service role, or the admin key (http/auth.ts reads it). */
export type Principal =
  | { kind: 'user'; userId: string; role: Role; email: string | null; claims: JWTPayload; token: string }
  | { kind: 'service'; token: string }
  | { kind: 'admin_key' }

declare module 'hono' {
  interface ContextVariableMap {
    requestId: string
    log: Logger
    principal: Principal
  }
}

/** What a route hands its service: the dependencies and the request it serves. */
export function serviceContext(deps: Deps, c: Context): ServiceContext {
  return { deps, requestId: c.get('requestId'), log: c.get('log') }
}
