// Users for tests: a row in auth.users, as GoTrue would write it, and a token for it.
import type { Sql } from '../../functions-shared/db/client.ts'
import type { Role } from '../../functions-shared/http/auth.ts'
import { signToken } from './tokens.ts'

export interface TestUser {
  id: string
  email: string
  role: Role
  token: string
}

export async function createUser(sql: Sql, options: { email?: string; role?: Role; fullName?: string } = {}): Promise<TestUser> {
  const id = crypto.randomUUID()
  const email = options.email ?? `user-${id.slice(0, 8)}@example.mr`
  const role = options.role ?? 'student'
  const appMeta = { provider: 'email', providers: ['email'], role }
  const userMeta = { full_name: options.fullName ?? 'Test User' }
  await sql`
    insert into auth.users (id, aud, role, email, email_confirmed_at, raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
    values (${id}, 'authenticated', 'authenticated', ${email}, now(), ${sql.json(appMeta)}, ${sql.json(userMeta)}, now(), now())`
  // a signed-in session, as GoTrue keeps one for each token it issues
  const session = crypto.randomUUID()
  await sql`insert into auth.sessions (id, user_id, created_at, updated_at, aal) values (${session}, ${id}, now(), now(), 'aal1')`
  return { id, email, role, token: await signToken({ sub: id, email, appRole: role, extra: { session_id: session } }) }
}
