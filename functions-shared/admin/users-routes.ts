// Admin: users and roles (spec §4.5).
import { createRoute, z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
import { adminSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { EmailSchema, FullNameSchema, passwordSchema, ProfileSchema, RoleSchema, UserIdParam } from '../identity/schemas.ts'
import { createUser, deleteUser, listProfiles, resetUserPassword, setHintLevel, setUserRole } from '../identity/service.ts'
import { listQuery } from '../http/list.ts'
import { serviceContext } from '../http/context.ts'

const notFound = { 404: jsonContent(ErrorSchema, 'Unknown user') }
const errors = { ...errorResponses.protected }
const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { 'application/json': { schema } }, required: true } })

export function adminUsersRouter(deps: Deps) {
  const password = passwordSchema(deps.config.AUTH_MIN_PASSWORD_LENGTH)
  const ListQuery = listQuery(deps.config)

  const testRole = createRoute({
    method: 'get',
    path: '/test-role',
    tags: ['admin'],
    summary: 'Check admin privileges',
    security: adminSecurity,
    responses: {
      200: jsonContent(
        z.object({ success: z.literal(true), role: z.literal('admin'), via: z.enum(['token', 'service_role', 'admin_key']) }),
        'The caller is an admin',
      ),
      ...errors,
    },
  })
  const list = createRoute({
    method: 'get',
    path: '/users',
    tags: ['admin'],
    summary: 'List profiles',
    security: adminSecurity,
    request: { query: ListQuery },
    responses: {
      200: jsonContent(
        z.object({ items: z.array(ProfileSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }).openapi('ProfileList'),
        'Newest first',
      ),
      ...errors,
    },
  })
  const create = createRoute({
    method: 'post',
    path: '/users',
    tags: ['admin'],
    summary: 'Create an account (email pre-confirmed)',
    security: adminSecurity,
    request: body(z.object({ email: EmailSchema, password, full_name: FullNameSchema, role: RoleSchema.default('student') }).openapi('CreateUserRequest')),
    responses: { 201: jsonContent(ProfileSchema, "The new account's profile"), 409: jsonContent(ErrorSchema, 'Email already registered'), ...errors },
  })
  const role = createRoute({
    method: 'patch',
    path: '/users/{user_id}/role',
    tags: ['admin'],
    summary: "Change a user's role (effective at their next token)",
    security: adminSecurity,
    request: { params: UserIdParam, ...body(z.object({ role: RoleSchema }).openapi('SetRoleRequest')) },
    responses: { 200: jsonContent(ProfileSchema, 'The updated profile'), ...notFound, ...errors },
  })
  const hint = createRoute({
    method: 'patch',
    path: '/users/{user_id}/hint-level',
    tags: ['admin'],
    summary: "Change a user's hint level",
    security: adminSecurity,
    request: { params: UserIdParam, query: z.object({ hint_level: z.coerce.number().int().min(1).max(5) }) },
    responses: { 200: jsonContent(ProfileSchema, 'The updated profile'), ...notFound, ...errors },
  })
  const remove = createRoute({
    method: 'delete',
    path: '/users/{user_id}',
    tags: ['admin'],
    summary: 'Delete the profile, then the account',
    security: adminSecurity,
    request: { params: UserIdParam },
    responses: {
      200: jsonContent(z.object({ status: z.literal('deleted'), user_id: z.uuid(), profile_deleted: z.boolean() }).openapi('DeleteUserResponse'), 'Deleted'),
      ...notFound,
      ...errors,
    },
  })
  const reset = createRoute({
    method: 'post',
    path: '/users/{user_id}/reset-password',
    tags: ['admin'],
    summary: 'Set a new password (signs the user out everywhere)',
    security: adminSecurity,
    request: { params: UserIdParam, ...body(z.object({ new_password: password }).openapi('AdminResetPasswordRequest')) },
    responses: { 200: jsonContent(z.object({ success: z.literal(true), user_id: z.uuid() }), 'Password changed'), ...notFound, ...errors },
  })

  return createRouter()
    .openapi(testRole, (c) => {
      const p = c.get('principal')
      return c.json({
        success: true as const,
        role: 'admin' as const,
        via: p.kind === 'user' ? ('token' as const) : p.kind === 'service' ? ('service_role' as const) : ('admin_key' as const),
      }, 200)
    })
    .openapi(list, async (c) => c.json(await listProfiles({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(create, async (c) => c.json(await createUser({ ctx: serviceContext(deps, c), input: c.req.valid('json') }), 201))
    .openapi(role, async (c) => c.json(await setUserRole({ ctx: serviceContext(deps, c), input: { ...c.req.valid('param'), ...c.req.valid('json') } }), 200))
    .openapi(hint, async (c) => c.json(await setHintLevel({ ctx: serviceContext(deps, c), input: { ...c.req.valid('param'), ...c.req.valid('query') } }), 200))
    .openapi(remove, async (c) => c.json(await deleteUser({ ctx: serviceContext(deps, c), input: c.req.valid('param') }), 200))
    .openapi(
      reset,
      async (c) => c.json(await resetUserPassword({ ctx: serviceContext(deps, c), input: { ...c.req.valid('param'), ...c.req.valid('json') } }), 200),
    )
}
