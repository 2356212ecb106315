// POST /auth/signup, /auth/signin, /auth/logout, /auth/reset-password: 5 requests per minute per IP.
import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { Deps } from '../deps.ts'
import { clientIp } from '../deps.ts'
import { createRouter } from '../http/router.ts'
import { errorResponses, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { EmailSchema, FullNameSchema, passwordSchema } from './schemas.ts'
import { requestPasswordReset, signIn, signOut, signUp } from './service.ts'

export function authRouter(deps: Deps) {
  const { limit } = guards(deps)
  const password = passwordSchema(deps.config.AUTH_MIN_PASSWORD_LENGTH)
  const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } }, required: true })
  const errors = { ...errorResponses.protected, 503: jsonContent(z.object({ error: z.string() }).passthrough(), 'Authentication service unavailable') }

  const signup = createRoute({
    method: 'post',
    path: '/signup',
    tags: ['auth'],
    summary: 'Create a student account',
    description: 'The account is a student; the profile is created by a trigger. Duplicate email: 409.',
    request: { body: json(z.object({ email: EmailSchema, password, full_name: FullNameSchema }).openapi('SignUpRequest')) },
    responses: {
      201: jsonContent(
        z.object({ success: z.literal(true), data: z.object({ user_id: z.uuid(), email: z.string() }) }).openapi('SignUpResponse'),
        'Account created',
      ),
      409: jsonContent(z.object({ error: z.string() }).passthrough(), 'Email already registered'),
      ...errors,
    },
  })

  const signin = createRoute({
    method: 'post',
    path: '/signin',
    tags: ['auth'],
    summary: 'Sign in with email and password',
    request: { body: json(z.object({ email: EmailSchema, password: z.string().min(1).max(72) }).openapi('SignInRequest')) },
    responses: {
      200: jsonContent(
        z
          .object({
            success: z.literal(true),
            data: z.object({
              access_token: z.string(),
              refresh_token: z.string(),
              token_type: z.string(),
              expires_in: z.number().int(),
              expires_at: z.number().int().nullable(),
              user: z.object({ id: z.uuid(), email: z.string().optional() }).passthrough(),
            }),
          })
          .openapi('SignInResponse'),
        'A session: send access_token as Bearer; refresh it with Supabase Auth (POST {SUPABASE_URL}/auth/v1/token?grant_type=refresh_token)',
      ),
      ...errors,
    },
  })

  const logout = createRoute({
    method: 'post',
    path: '/logout',
    tags: ['auth'],
    summary: 'Sign out',
    description: 'Revokes the session of the access token sent as Bearer, if any. Always succeeds: the client discards its tokens.',
    responses: { 200: jsonContent(z.object({ success: z.literal(true), data: z.object({ revoked: z.boolean() }) }), 'Signed out'), ...errorResponses.public },
  })

  const reset = createRoute({
    method: 'post',
    path: '/reset-password',
    tags: ['auth'],
    summary: 'Send a password reset link',
    description: 'The same answer whether or not the email has an account.',
    request: { body: json(z.object({ email: EmailSchema, redirect_to: z.url().optional() }).openapi('ResetPasswordRequest')) },
    responses: { 200: jsonContent(z.object({ success: z.literal(true), message: z.string() }), 'Accepted'), ...errors },
  })

  // the client's address goes to Auth (Sb-Forwarded-For), which limits per client rather than per service
  const ctxOf = (c: Context) => ({ deps, requestId: c.get('requestId') as string, clientIp: clientIp(deps, c) })
  const router = createRouter()
  router.use('*', limit('auth'))
  return router
    .openapi(signup, async (c) => c.json({ success: true as const, data: await signUp({ ctx: ctxOf(c), input: c.req.valid('json') }) }, 201))
    .openapi(signin, async (c) => c.json({ success: true as const, data: await signIn({ ctx: ctxOf(c), input: c.req.valid('json') }) }, 200))
    .openapi(logout, async (c) => {
      const token = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1] ?? null
      return c.json({ success: true as const, data: await signOut({ ctx: { deps, requestId: c.get('requestId') }, input: { accessToken: token } }) }, 200)
    })
    .openapi(reset, async (c) => {
      await requestPasswordReset({ ctx: ctxOf(c), input: c.req.valid('json') })
      return c.json({ success: true as const, message: 'If an account exists for this email, a reset link has been sent.' }, 200)
    })
}
