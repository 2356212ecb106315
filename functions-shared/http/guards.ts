// The guards and limits routers put in front of their routes, bound to the deps, with the token verifier
// and the rate-limit store they share in a process (made by the first router that asks).
import type { Deps } from '../deps.ts'
import { rateLimitClient } from '../deps.ts'
import { createTokenVerifier, requireAdmin, requireUser, type TokenVerifier } from './auth.ts'
import { asService } from '../db/tx.ts'
import { rateLimit, type RateLimitScope } from './rate-limit/middleware.ts'
import type { RateLimitStore } from './rate-limit/store.ts'
import { MemoryRateLimitStore } from './rate-limit/memory-store.ts'
import { PostgresRateLimitStore } from './rate-limit/postgres-store.ts'

const verifiers = new WeakMap<Deps, TokenVerifier>()
const stores = new WeakMap<Deps, RateLimitStore>()

/** Makes `store` the one the process's rate limits count in (tests compare the stores). */
export function useRateLimitStore(deps: Deps, store: RateLimitStore): void {
  stores.set(deps, store)
}

/** The process's token verifier (JWT_SECRET, or the keys of JWT_JWKS_URL), made at its first use. */
export function tokenVerifier(deps: Deps): TokenVerifier {
  let verifier = verifiers.get(deps)
  if (!verifier) {
    const { config } = deps
    verifier = createTokenVerifier({
      secret: config.JWT_SECRET,
      jwksUrl: config.JWT_JWKS_URL,
      clockToleranceSeconds: config.JWT_CLOCK_TOLERANCE_SECONDS,
      clock: deps.clock,
    })
    verifiers.set(deps, verifier)
  }
  return verifier
}

/** Where the process's rate limits count: RATE_LIMIT_STORE's store, made at its first use, unless one was given. */
export function rateLimitStore(deps: Deps): RateLimitStore {
  let store = stores.get(deps)
  if (!store) stores.set(deps, store = deps.config.RATE_LIMIT_STORE === 'postgres' ? new PostgresRateLimitStore(deps.sql) : new MemoryRateLimitStore())
  return store
}

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
    user: requireUser({ verifier: tokenVerifier(deps) }),
    admin: requireAdmin({
      verifier: tokenVerifier(deps),
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
        store: rateLimitStore(deps),
        clock: deps.clock,
        by: by ?? (BY_IP.has(scope) ? 'ip' : 'principal'),
        clientIp: (c) => rateLimitClient(deps, c),
      }),
  }
}
