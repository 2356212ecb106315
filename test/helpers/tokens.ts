// Access tokens shaped as GoTrue issues them, for tests.
import { SignJWT } from 'jose'
import { LOCAL_JWT_SECRET } from '../../functions-shared/config.ts'

export interface TokenOptions {
  sub?: string
  appRole?: string | null
  userRole?: string
  email?: string
  expiresIn?: number
  secret?: string
  aud?: string
  role?: string
  extra?: Record<string, unknown>
  noExp?: boolean
  alg?: 'HS256' | 'HS512'
}

export async function signToken(options: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const appMetadata: Record<string, unknown> = { provider: 'email', providers: ['email'] }
  if (options.appRole !== null) appMetadata.role = options.appRole ?? 'student'
  const claims: Record<string, unknown> = {
    iss: 'http://127.0.0.1:54321/auth/v1',
    sub: options.sub ?? crypto.randomUUID(),
    aud: options.aud ?? 'authenticated',
    email: options.email ?? 'eleve@example.mr',
    phone: '',
    app_metadata: appMetadata,
    user_metadata: options.userRole ? { role: options.userRole } : {},
    role: options.role ?? 'authenticated',
    aal: 'aal1',
    amr: [{ method: 'password', timestamp: now }],
    session_id: crypto.randomUUID(),
    is_anonymous: false,
    iat: now,
    ...options.extra,
  }
  if (!options.noExp) claims.exp = now + (options.expiresIn ?? 3600)
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(options.secret ?? LOCAL_JWT_SECRET))
}

export const adminToken = (o: TokenOptions = {}) => signToken({ appRole: 'admin', ...o })
export const studentToken = (o: TokenOptions = {}) => signToken({ appRole: 'student', ...o })

/** An unsigned token (alg none), which must never be accepted. */
export function unsignedToken(claims: Record<string, unknown>): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` })
