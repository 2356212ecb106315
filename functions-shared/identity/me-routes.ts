// GET /me and PATCH /me: the caller's own profile, read and written as the user, so RLS guards it.
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { bearerSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { FullNameSchema, ProfileSchema } from './schemas.ts'
import { getOwnProfile, updateOwnProfile } from './service.ts'

const get = createRoute({
  method: 'get',
  path: '/',
  tags: ['profile'],
  summary: 'My profile',
  security: bearerSecurity,
  responses: { 200: jsonContent(ProfileSchema, 'The profile'), 404: jsonContent(ErrorSchema, 'No profile for this account'), ...errorResponses.protected },
})

const patch = createRoute({
  method: 'patch',
  path: '/',
  tags: ['profile'],
  summary: 'Change my full name',
  description: 'Only full_name may change here; any other field is refused with 400.',
  security: bearerSecurity,
  request: {
    body: { content: { 'application/json': { schema: z.strictObject({ full_name: FullNameSchema }).openapi('UpdateProfileRequest') } }, required: true },
  },
  responses: {
    200: jsonContent(ProfileSchema, 'The updated profile'),
    404: jsonContent(ErrorSchema, 'No profile for this account'),
    ...errorResponses.protected,
  },
})

export function meRouter(deps: Deps) {
  const { user, limit } = guards(deps)
  const router = createRouter()
  router.use('*', user, limit('profile'))
  return router
    .openapi(get, async (c) => c.json(await getOwnProfile({ ctx: { deps, requestId: c.get('requestId') }, principal: c.get('principal') }), 200))
    .openapi(
      patch,
      async (c) =>
        c.json(await updateOwnProfile({ ctx: { deps, requestId: c.get('requestId') }, principal: c.get('principal'), input: c.req.valid('json') }), 200),
    )
}
