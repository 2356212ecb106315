// The anon and service-role API keys: HS256 JWTs with the claims of Supabase's local keys, so with the
// default secret they are byte-for-byte the keys `supabase start` prints.
import { SignJWT } from 'jose'

const LOCAL_KEY_EXPIRY = 1983812996

export async function apiKey(secret: string, role: 'anon' | 'service_role'): Promise<string> {
  return new SignJWT({ iss: 'supabase-demo', role, exp: LOCAL_KEY_EXPIRY })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(secret))
}
