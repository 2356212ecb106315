// The local auth server's flows that go through a mailbox, driven by the real supabase-js as an app drives
// GoTrue: email codes and magic links, sign-up confirmation, resend, invitations, admin links,
// reauthentication and anonymous sign-in, with every email kept in the local mailbox (/mail), as the
// Supabase CLI's mail catcher keeps them.
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import type { MailMessage } from '../local-platform/auth/mailbox.ts'

let db: TestDatabase
let plain: Gateway
let strict: Gateway
let anonKey: string
let serviceKey: string

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }
const client = (gw: Gateway): SupabaseClient => createClient(gw.url, anonKey, options)
const admin = (gw: Gateway) => createClient(gw.url, serviceKey, options).auth.admin
const mail = async (gw: Gateway, to: string): Promise<MailMessage[]> =>
  ((await (await fetch(`${gw.url}/mail/api/messages?to=${encodeURIComponent(to)}`, { headers: { Authorization: `Bearer ${serviceKey}` } })).json()) as {
    messages: MailMessage[]
  }).messages
const address = () => `m-${crypto.randomUUID().slice(0, 8)}@example.mr`
const limits = {
  AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000',
  AUTH_RATE_LIMIT_EMAIL_SENT: '100000',
  AUTH_RATE_LIMIT_TOKEN_VERIFICATIONS: '100000',
  AUTH_EMAIL_MAX_FREQUENCY_SECONDS: '0',
  LOG_LEVEL: 'silent',
}

beforeAll(async () => {
  db = await createTestDatabase()
  plain = await startGateway({ config: testConfig(limits), sql: db.sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }) } })
  strict = await startGateway({
    config: testConfig({ ...limits, AUTH_ENABLE_CONFIRMATIONS: 'true', AUTH_ANONYMOUS_SIGN_INS: 'true' }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
  })
  anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
  serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
})
afterAll(async () => {
  await plain?.close(1000)
  await strict?.close(1000)
  await db?.close()
})

describe('email codes and magic links (/otp, /verify)', () => {
  it('signs in with the emailed code, making the account on the first one, and the code works once', async () => {
    const email = address()
    expect(await client(plain).auth.signInWithOtp({ email })).toMatchObject({ error: null })
    const [message] = await mail(plain, email)
    expect(message).toMatchObject({ to: email, code: expect.stringMatching(/^\d{6}$/), link: expect.stringContaining('/auth/v1/verify?token=') })
    const verified = await client(plain).auth.verifyOtp({ email, token: message!.code!, type: 'email' })
    expect(verified.error).toBeNull()
    expect(verified.data.user).toMatchObject({ email, email_confirmed_at: expect.any(String) })
    expect(decodeJwt(verified.data.session!.access_token)).toMatchObject({ email, amr: [{ method: 'otp' }], is_anonymous: false })
    const again = await client(plain).auth.verifyOtp({ email, token: message!.code!, type: 'email' })
    expect(again.error).toMatchObject({ status: 403, code: 'otp_expired' })
    // a wrong code is refused the same way
    await client(plain).auth.signInWithOtp({ email })
    expect((await client(plain).auth.verifyOtp({ email, token: '000000', type: 'email' })).error).toMatchObject({ code: 'otp_expired' })
  })

  it('follows the magic link of an existing account to the redirect with the session in its fragment', async () => {
    const email = address()
    await admin(plain).createUser({ email, password: 'secret-123', email_confirm: true })
    await client(plain).auth.signInWithOtp({ email, options: { emailRedirectTo: 'http://127.0.0.1:3000/welcome' } })
    const [message] = await mail(plain, email)
    expect(message!.subject).toBe('Your Magic Link')
    const res = await fetch(message!.link!, { redirect: 'manual' })
    expect(res.status).toBe(303)
    const target = new URL(res.headers.get('location')!)
    expect(`${target.origin}${target.pathname}`).toBe('http://127.0.0.1:3000/welcome')
    const fragment = new URLSearchParams(target.hash.slice(1))
    expect(fragment.get('type')).toBe('magiclink')
    expect(decodeJwt(fragment.get('access_token')!)).toMatchObject({ email, amr: [{ method: 'magiclink' }] })
  })

  it('makes no account when told not to (422 otp_disabled)', async () => {
    const email = address()
    const res = await client(plain).auth.signInWithOtp({ email, options: { shouldCreateUser: false } })
    expect(res.error).toMatchObject({ status: 422, code: 'otp_disabled' })
    expect(await mail(plain, email)).toEqual([])
  })
})

describe('sign-up confirmation (AUTH_ENABLE_CONFIRMATIONS)', () => {
  it('answers a sign-up with the user alone, signs it in only once the emailed link confirms it, and resends the link', async () => {
    const email = address()
    const signUp = await client(strict).auth.signUp({ email, password: 'secret-123' })
    expect(signUp.error).toBeNull()
    expect(signUp.data.session).toBeNull()
    expect(signUp.data.user).toMatchObject({ email })
    expect(signUp.data.user!.email_confirmed_at).toBeUndefined()
    expect((await client(strict).auth.signInWithPassword({ email, password: 'secret-123' })).error).toMatchObject({ code: 'email_not_confirmed' })
    expect(await client(strict).auth.resend({ type: 'signup', email })).toMatchObject({ error: null })
    const messages = await mail(strict, email)
    expect(messages.map((m) => m.subject)).toEqual(['Confirm Your Signup', 'Confirm Your Signup'])
    const tokenHash = new URL(messages[0]!.link!).searchParams.get('token')!
    const confirmed = await client(strict).auth.verifyOtp({ token_hash: tokenHash, type: 'signup' })
    expect(confirmed.error).toBeNull()
    expect((await client(strict).auth.signInWithPassword({ email, password: 'secret-123' })).error).toBeNull()
    const settings = await (await fetch(`${strict.url}/auth/v1/settings`)).json()
    expect(settings).toMatchObject({ mailer_autoconfirm: false, external: { anonymous_users: true } })
  })
})

describe('admin mail: invitations and generated links', () => {
  it("invites by email, and the invitation's link signs the invitee in", async () => {
    const email = address()
    const invited = await admin(plain).inviteUserByEmail(email, { data: { full_name: 'Invitée' } })
    expect(invited.error).toBeNull()
    expect(invited.data.user).toMatchObject({ email, invited_at: expect.any(String) })
    const [message] = await mail(plain, email)
    expect(message!.subject).toBe('You have been invited')
    const session = await client(plain).auth.verifyOtp({ token_hash: new URL(message!.link!).searchParams.get('token')!, type: 'invite' })
    expect(decodeJwt(session.data.session!.access_token)).toMatchObject({ email, amr: [{ method: 'invite' }] })
  })

  it('generates a link and its code without sending anything, for an address with or without an account', async () => {
    const email = address()
    const link = await admin(plain).generateLink({ type: 'magiclink', email })
    expect(link.error).toBeNull()
    expect(link.data.properties).toMatchObject({
      email_otp: expect.stringMatching(/^\d{6}$/),
      hashed_token: expect.stringMatching(/^[0-9a-f]{56}$/),
      verification_type: 'signup',
      action_link: expect.stringContaining('token='),
    })
    expect(await mail(plain, email)).toEqual([])
    const verified = await client(plain).auth.verifyOtp({ token_hash: link.data.properties!.hashed_token, type: 'signup' })
    expect(verified.data.user).toMatchObject({ email })
    const recovery = await admin(plain).generateLink({ type: 'recovery', email: address() })
    expect(recovery.error).toMatchObject({ status: 404, code: 'user_not_found' })
  })

  it('validates as GoTrue does: an address of the wrong form, a page below one', async () => {
    expect((await admin(plain).createUser({ email: 'xx:;x@x.x', password: 'secret-123' })).error).toMatchObject({ status: 400, code: 'validation_failed' })
    const page = await fetch(`${plain.url}/auth/v1/admin/users?page=-1`, { headers: { apikey: serviceKey, Authorization: `Bearer ${serviceKey}` } })
    expect(page.status).toBe(400)
    const unknown = await fetch(`${plain.url}/auth/v1/nowhere`)
    expect(unknown.status).toBe(404)
    expect(await unknown.text()).toBe('404 page not found')
  })
})

describe('reauthentication and anonymous users', () => {
  it('mails a reauthentication code to the signed-in user', async () => {
    const email = address()
    const supabase = client(plain)
    await supabase.auth.signUp({ email, password: 'secret-123' })
    expect(await supabase.auth.reauthenticate()).toMatchObject({ error: null })
    expect((await mail(plain, email))[0]).toMatchObject({ subject: 'Confirm reauthentication', code: expect.stringMatching(/^\d{6}$/), link: null })
  })

  it('signs in anonymously where enabled (is_anonymous in the token and the user), and refuses it where not', async () => {
    expect((await client(plain).auth.signInAnonymously()).error).toMatchObject({ status: 422, code: 'anonymous_provider_disabled' })
    const anonymous = await client(strict).auth.signInAnonymously({ options: { data: { grade: '7AS' } } })
    expect(anonymous.error).toBeNull()
    expect(anonymous.data.user).toMatchObject({ is_anonymous: true, email: '', user_metadata: { grade: '7AS' } })
    expect(decodeJwt(anonymous.data.session!.access_token)).toMatchObject({ role: 'authenticated', is_anonymous: true, amr: [{ method: 'anonymous' }] })
  })

  it('lists the mail on a page and as JSON, to the service-role key only: the mail holds sign-in links', async () => {
    for (const headers of [{}, { Authorization: `Bearer ${anonKey}` }, { apikey: anonKey }] as Record<string, string>[]) {
      expect((await fetch(`${plain.url}/mail/api/messages`, { headers })).status).toBe(401)
    }
    const page = await fetch(`${plain.url}/mail?apikey=${serviceKey}`)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(await page.text()).toContain('Your Magic Link')
    const all = (await (await fetch(`${plain.url}/mail/api/messages`, { headers: { apikey: serviceKey } })).json()) as { messages: MailMessage[] }
    expect(all.messages.length).toBeGreaterThan(3)
  })
})

describe('what the local auth server does not serve', () => {
  it('answers as a project with phone and WebAuthn factors, passkeys, SSO, manual linking and the OAuth server turned off', async () => {
    const supabase = client(plain)
    const email = address()
    const { data } = await supabase.auth.signUp({ email, password: 'secret-123' })
    expect((await supabase.auth.mfa.enroll({ factorType: 'webauthn' } as never)).error).toMatchObject({
      status: 422,
      code: 'mfa_webauthn_enroll_not_enabled',
      message: 'MFA enroll is disabled for WebAuthn',
    })
    expect((await supabase.auth.mfa.challenge({ factorId: crypto.randomUUID() })).error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })
    expect((await supabase.auth.signInWithSSO({ domain: 'example.mr' })).error).toMatchObject({
      status: 404,
      code: 'saml_provider_disabled',
      message: 'SAML 2.0 is disabled',
    })
    const link = await fetch(`${plain.url}/auth/v1/user/identities/authorize?provider=github`, {
      headers: { apikey: anonKey, Authorization: `Bearer ${data.session!.access_token}` },
    })
    expect(link.status).toBe(404)
    expect(await link.json()).toMatchObject({ code: 404, error_code: 'manual_linking_disabled', msg: 'Manual linking is disabled' })
    expect(await admin(plain).mfa.listFactors({ userId: data.user!.id })).toMatchObject({ error: null, data: { factors: [] } })
    expect((await admin(plain).mfa.listFactors({ userId: crypto.randomUUID() })).error).toMatchObject({ status: 404, code: 'user_not_found' })
    const passkeys = await fetch(`${plain.url}/auth/v1/passkeys/registration/options`, { method: 'POST', headers: { apikey: anonKey } })
    expect(await passkeys.json()).toMatchObject({ error_code: 'passkey_disabled' })
    const oauth = await fetch(`${plain.url}/auth/v1/admin/oauth/clients`, { headers: { apikey: serviceKey, Authorization: `Bearer ${serviceKey}` } })
    expect(await oauth.json()).toMatchObject({ error_code: 'feature_disabled', msg: 'OAuth server is disabled' })
  })

  it('refuses phone codes and other grants as GoTrue does where those providers are off', async () => {
    expect((await client(plain).auth.verifyOtp({ phone: '22236123456', token: '123456', type: 'sms' })).error).toMatchObject({
      status: 403,
      code: 'otp_expired',
    })
    expect((await client(plain).auth.verifyOtp({ phone: 'not-a-number', token: '123456', type: 'sms' })).error).toMatchObject({
      status: 400,
      message: 'Invalid phone number format (E.164 required)',
    })
    expect((await client(plain).auth.signUp({ phone: '22236123456', password: 'secret-123' })).error).toMatchObject({
      status: 400,
      code: 'phone_provider_disabled',
    })
    const web3 = await fetch(`${plain.url}/auth/v1/token?grant_type=web3`, {
      method: 'POST',
      headers: { apikey: anonKey, 'content-type': 'application/json' },
      body: '{"chain":"solana"}',
    })
    expect(await web3.json()).toMatchObject({ code: 422, error_code: 'web3_provider_disabled' })
    const pkce = await fetch(`${plain.url}/auth/v1/token?grant_type=pkce`, {
      method: 'POST',
      headers: { apikey: anonKey, 'content-type': 'application/json' },
      body: '{"auth_code":"x","code_verifier":"y"}',
    })
    expect(pkce.status).toBe(404)
    expect(await pkce.json()).toMatchObject({ error_code: 'flow_state_not_found' })
  })
})
