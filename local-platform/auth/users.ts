// auth.users rows and their JSON, as GoTrue serializes them (models/user.go).
import type { Sql, Tx } from '../../functions-shared/db/client.ts'

type Db = Sql | Tx

export interface UserRow {
  id: string
  aud: string | null
  role: string | null
  email: string | null
  phone: string | null
  email_confirmed_at: Date | null
  phone_confirmed_at: Date | null
  confirmed_at: Date | null
  confirmation_sent_at: Date | null
  invited_at: Date | null
  recovery_sent_at: Date | null
  last_sign_in_at: Date | null
  banned_until: Date | null
  raw_app_meta_data: Record<string, unknown> | null
  raw_user_meta_data: Record<string, unknown> | null
  created_at: Date | null
  updated_at: Date | null
  is_anonymous: boolean
}

/** A user with the hash the password grant checks. */
export interface CredentialRow extends UserRow {
  encrypted_password: string | null
}

interface IdentityRow {
  id: string
  provider_id: string
  user_id: string
  identity_data: Record<string, unknown>
  provider: string
  last_sign_in_at: Date | null
  created_at: Date | null
  updated_at: Date | null
  email: string | null
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : undefined)

function compact<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}

export function userJson(u: UserRow, identities: IdentityRow[], factors: Record<string, unknown>[] = []): Record<string, unknown> {
  return compact({
    id: u.id,
    aud: u.aud ?? 'authenticated',
    role: u.role ?? '',
    email: u.email ?? '',
    email_confirmed_at: iso(u.email_confirmed_at),
    phone: u.phone ?? '',
    phone_confirmed_at: iso(u.phone_confirmed_at),
    invited_at: iso(u.invited_at),
    confirmation_sent_at: iso(u.confirmation_sent_at),
    confirmed_at: iso(u.confirmed_at),
    recovery_sent_at: iso(u.recovery_sent_at),
    last_sign_in_at: iso(u.last_sign_in_at),
    app_metadata: u.raw_app_meta_data ?? {},
    user_metadata: u.raw_user_meta_data ?? {},
    identities: identities.map((i) =>
      compact({
        identity_id: i.id,
        id: i.provider_id,
        user_id: i.user_id,
        identity_data: i.identity_data,
        provider: i.provider,
        last_sign_in_at: iso(i.last_sign_in_at),
        created_at: iso(i.created_at),
        updated_at: iso(i.updated_at),
        email: i.email ?? undefined,
      })
    ),
    created_at: iso(u.created_at),
    updated_at: iso(u.updated_at),
    // as GoTrue's omitempty: no key for a user without factors
    factors: factors.length ? factors : undefined,
    banned_until: iso(u.banned_until),
    is_anonymous: u.is_anonymous,
  })
}

const USER_COLUMNS = `id, aud, role, email, phone, email_confirmed_at, phone_confirmed_at, confirmed_at, confirmation_sent_at, invited_at,
  recovery_sent_at, last_sign_in_at, banned_until, raw_app_meta_data, raw_user_meta_data, created_at, updated_at, is_anonymous`

export async function findUser(db: Db, id: string, options: { lock?: boolean } = {}): Promise<UserRow | null> {
  if (!UUID.test(id)) return null
  const rows = await db.unsafe<UserRow[]>(`select ${USER_COLUMNS} from auth.users where id = $1 ${options.lock ? 'for update' : ''}`, [id])
  return rows[0] ?? null
}

export async function findUserByEmail(db: Db, email: string): Promise<CredentialRow | null> {
  const rows = await db.unsafe<CredentialRow[]>(`select ${USER_COLUMNS}, encrypted_password from auth.users where email = $1 and is_sso_user = false`, [email])
  return rows[0] ?? null
}

/** The stored password hash of a user (null when it has none or there is no such user). */
export async function passwordOf(db: Db, id: string): Promise<string | null> {
  const rows = await db<{ encrypted_password: string | null }[]>`select encrypted_password from auth.users where id = ${id}`
  return rows[0]?.encrypted_password || null
}

export async function userWithIdentities(db: Db, id: string): Promise<Record<string, unknown> | null> {
  const user = await findUser(db, id)
  if (!user) return null
  const identities = await db<IdentityRow[]>`select id, provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at, email
    from auth.identities where user_id = ${id} order by created_at`
  return userJson(user, identities, await factorsOf(db, id))
}

export interface FactorRow {
  id: string
  friendly_name: string | null
  factor_type: string
  status: string
  created_at: Date
  updated_at: Date
  last_challenged_at: Date | null
  phone: string | null
}

/** A factor as GoTrue's JSON gives it (never its secret). */
export function factorJson(f: FactorRow): Record<string, unknown> {
  return compact({
    id: f.id,
    friendly_name: f.friendly_name || undefined,
    factor_type: f.factor_type,
    status: f.status,
    created_at: iso(f.created_at),
    updated_at: iso(f.updated_at),
    last_challenged_at: f.last_challenged_at ? iso(f.last_challenged_at) : null,
    phone: f.phone ?? '',
  })
}

export async function factorsOf(db: Db, userId: string): Promise<Record<string, unknown>[]> {
  const rows = await db<FactorRow[]>`select id, friendly_name, factor_type::text, status::text, created_at, updated_at, last_challenged_at, phone
    from auth.mfa_factors where user_id = ${userId} order by created_at`
  return rows.map(factorJson)
}

/** GoTrue's metadata update: a shallow merge in which a key set to null is removed. */
export function mergeMetadata(current: Record<string, unknown> | null, patch: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...(current ?? {}) }
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete merged[k]
    else merged[k] = v
  }
  return merged
}

// the domain's labels are not empty: "a@example.mr." and "a@example..mr" name the domain of "a@example.mr"
// (the dot that ends a name in DNS), and were each an account of their own, with its own welcome tokens
// GoTrue's check (checkmail's format): an ASCII local part of the characters RFC 5322 allows unquoted, a
// domain of labels of letters, digits and inner hyphens
const EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/
/** Control, format (zero-width, bidi) and unassigned characters and every kind of space: unseen in an address. */
const UNSEEN = /[\p{C}\p{Z}]/u

/**
 * An address as it is stored and compared: trimmed, in Unicode's compatibility form (NFKC) and lower
 * case; '' when it is no address. Without the form, one address could be registered once per way of
 * writing it — a full-width letter, a decomposed accent — and an invisible character made another
 * account of an address that reads the same (`a@\u200bexample.mr`), each with its own welcome tokens.
 */
export function normalizeEmail(raw: unknown): string {
  // the length first: the pattern backtracks in time quadratic in the length of what it is given ("a@"
  // and a long run of dots takes minutes at a request body's size, and blocks every request meanwhile)
  if (typeof raw !== 'string' || raw.length > 255 || !EMAIL.test(raw.trim())) {
    return ''
  }
  // the form and lower-casing can lengthen a string ("ﬀ" becomes "ff", "İ" an "i" and a combining dot):
  // auth.users.email holds 255
  const email = raw.trim().normalize('NFKC').toLowerCase()
  return email.length > 255 || UNSEEN.test(email) || !EMAIL.test(email) ? '' : email
}
