// The guards and limits routers put in front of their routes, bound to the deps.
import type { Deps } from '../deps.ts'
import { rateLimitClient } from '../deps.ts'
import { requireAdmin, requireUser } from './auth.ts'
import { asService } from '../db/tx.ts'
import { rateLimit, type RateLimitScope } from './rate-limit/middleware.ts'

const LIMIT_SETTING = {
  chat: 'RATE_LIMIT_CHAT_PER_MINUTE',
  wallet: 'RATE_LIMIT_WALLET_PER_MINUTE',
  upload: 'RATE_LIMIT_UPLOAD_PER_MINUTE',
  auth: 'RATE_LIMIT_AUTH_PER_MINUTE',
  admin: 'RATE_LIMIT_ADMIN_PER_MINUTE',
  public: 'RATE_LIMIT_PUBLIC_PER_MINUTE',
  profile: 'RATE_LIMIT_PROFILE_PER_MINUTE',
  rest: 'RATE_LIMIT_REST_PER_MINUTE',
  turns: 'RATE_LIMIT_TURNS_PER_MINUTE',
} as const

/** Scopes keyed by client IP; the others are keyed by the authenticated principal. */
const BY_IP: ReadonlySet<RateLimitScope> = new Set(['auth', 'public'])

export function guards(deps: Deps) {
  const { config } = deps
  return {
    user: requireUser({ verifier: deps.verifier }),
    admin: requireAdmin({
      verifier: deps.verifier,
      adminApiKey: config.ADMIN_API_KEY,
      // the role in profiles and the session in auth.sessions, not the token's word for them
      stillAdmin: async (userId, sessionId) => {
        const [row] = await asService(deps.sql, (tx) => tx<{ ok: boolean }[]>`select private.admin_session(${userId}::uuid, ${sessionId}::text) as ok`)
        return row?.ok === true
      },
    }),
    /** A scope's limit, by its usual key (client IP or principal) unless `by` says which. */
    limit: (scope: RateLimitScope, by?: 'ip' | 'principal') =>
      rateLimit({
        scope,
        limit: config[LIMIT_SETTING[scope]],
        windowMs: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
        store: deps.rateLimits,
        clock: deps.clock,
        by: by ?? (BY_IP.has(scope) ? 'ip' : 'principal'),
        clientIp: (c) => rateLimitClient(deps, c),
      }),
  }
}
