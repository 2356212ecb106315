// The request and response shapes of the identity routes (/auth, /me, /admin/users), with their OpenAPI examples.
import { z } from '@hono/zod-openapi'
import { ROLES } from '../domain/enums.ts'

export const RoleSchema = z.enum(ROLES).openapi({ example: 'student' })

export const ProfileSchema = z
  .object({
    id: z.uuid(),
    email: z.email().nullable(),
    full_name: z.string(),
    role: RoleSchema,
    hint_level: z.number().int().min(1).max(5).openapi({ description: 'Pedagogical hint level, 1 (direct answers) to 5 (hints only); 3 for new accounts' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    updated_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Profile')

export const EmailSchema = z.string().trim().toLowerCase().pipe(z.email()).openapi({ example: 'eleve@example.mr', format: 'email' })
export const FullNameSchema = z.string().trim().min(1).max(200).openapi({ example: 'Amina Mint Ahmed' })
export const passwordSchema = (min: number) => z.string().min(min).max(72).openapi({ format: 'password', description: `${min} to 72 characters` })
export const UserIdParam = z.object({ user_id: z.uuid().openapi({ param: { name: 'user_id', in: 'path' } }) })
