// TOTP factors on the local auth server, driven by the real supabase-js as an app drives GoTrue: enroll,
// challenge, verify with a code an authenticator app would show (computed from the enrolled secret),
// the aal2 session that follows, unenroll, the admin factor endpoints, and the refusals GoTrue gives.
import { createClient, type SupabaseClient } from '@supabase/supabase-js'
import { decodeJwt } from 'jose'
import * as OTPAuth from 'otpauth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'

let db: TestDatabase
let gw: Gateway
let slow: Gateway
let off: Gateway
let anonKey: string
let serviceKey: string
const clock = new FakeClock(Date.now())

const options = { auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false } }
const client = (): SupabaseClient => createClient(gw.url, anonKey, options)
const admin = () => createClient(gw.url, serviceKey, options).auth.admin
/** The code an authenticator app shows for `secret` at the server's time. */
const codeFor = (secret: string, offsetSeconds = 0) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: clock.now() + offsetSeconds * 1000,
  })

/** A signed-in student with a TOTP factor enrolled (not yet verified). */
async function enrolled(name?: string) {
  const auth = client().auth
  const email = `mfa-${crypto.randomUUID().slice(0, 8)}@example.mr`
  const password = 'correct horse battery'
  expect((await auth.signUp({ email, password })).error).toBeNull()
  const enroll = await auth.mfa.enroll({ factorType: 'totp', friendlyName: name })
  expect(enroll.error).toBeNull()
  return { auth, email, password, factorId: enroll.data!.id, secret: enroll.data!.totp.secret, enroll: enroll.data! }
}

beforeAll(async () => {
  db = await createTestDatabase()
  const config = { AUTH_RATE_LIMIT_SIGN_IN_SIGN_UPS: '100000', AUTH_RATE_LIMIT_MFA: '100000', LOG_LEVEL: 'silent' }
  gw = await startGateway({ config: testConfig(config), sql: db.sql, port: 0, deps: { clock, logs: createLogRoot({ level: 'silent' }) } })
  // GoTrue's MFA limit (15 a minute, burst 30)
  slow = await startGateway({
    config: testConfig({ ...config, AUTH_RATE_LIMIT_MFA: '15' }),
    sql: db.sql,
    port: 0,
    deps: { clock, logs: createLogRoot({ level: 'silent' }) },
  })
  off = await startGateway({
    config: testConfig({ ...config, AUTH_MFA_TOTP_ENABLED: 'false' }),
    sql: db.sql,
    port: 0,
    deps: { clock, logs: createLogRoot({ level: 'silent' }) },
  })
  anonKey = await apiKey(LOCAL_JWT_SECRET, 'anon')
  serviceKey = await apiKey(LOCAL_JWT_SECRET, 'service_role')
})
afterAll(async () => {
  await gw?.close(1000)
  await slow?.close(1000)
  await off?.close(1000)
  await db?.close()
})

describe('TOTP factors', () => {
  it('enrolls a factor with its secret, otpauth URI and QR code, and lists it unverified', async () => {
    const { auth, email, enroll } = await enrolled('Phone')
    expect(enroll).toMatchObject({ type: 'totp', friendly_name: 'Phone' })
    expect(enroll.totp.secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(enroll.totp.uri).toContain(`otpauth://totp/127.0.0.1%3A3000:${encodeURIComponent(email)}?`)
    expect(enroll.totp.uri).toContain(`secret=${enroll.totp.secret}`)
    // supabase-js makes GoTrue's SVG a data URL
    expect(enroll.totp.qr_code).toMatch(/^data:image\/svg\+xml;utf-8,<svg[^>]*>.*<\/svg>$/s)
    const factors = await auth.mfa.listFactors()
    expect(factors.data!.all).toEqual([expect.objectContaining({ id: enroll.id, factor_type: 'totp', status: 'unverified', friendly_name: 'Phone' })])
    // an unverified factor is not one to sign in with
    expect(factors.data!.totp).toEqual([])
    // a second factor with the same name is refused, as GoTrue refuses it
    expect((await auth.mfa.enroll({ factorType: 'totp', friendlyName: 'Phone' })).error).toMatchObject({ status: 422, code: 'mfa_factor_name_conflict' })
  })

  it('verifies the code of the moment: the session becomes aal2 with totp first in its amr, and stays so on refresh', async () => {
    const { auth, factorId, secret } = await enrolled()
    const challenge = await auth.mfa.challenge({ factorId })
    expect(challenge.data).toMatchObject({ id: expect.any(String), type: 'totp', expires_at: Math.floor(clock.now() / 1000) + 300 })
    const verified = await auth.mfa.verify({ factorId, challengeId: challenge.data!.id, code: codeFor(secret) })
    expect(verified.error).toBeNull()
    const claims = decodeJwt(verified.data!.access_token)
    expect(claims).toMatchObject({ aal: 'aal2', amr: [{ method: 'totp' }, { method: 'password' }] })
    expect((await auth.mfa.getAuthenticatorAssuranceLevel()).data).toMatchObject({ currentLevel: 'aal2', nextLevel: 'aal2' })
    expect((await auth.mfa.listFactors()).data!.totp).toEqual([expect.objectContaining({ id: factorId, status: 'verified' })])
    clock.advance(60_000)
    const refreshed = await auth.refreshSession()
    expect(refreshed.error).toBeNull()
    expect(decodeJwt(refreshed.data.session!.access_token)).toMatchObject({ aal: 'aal2', amr: [{ method: 'totp' }, { method: 'password' }] })
    // a challenge answers once
    const again = await auth.mfa.verify({ factorId, challengeId: challenge.data!.id, code: codeFor(secret) })
    expect(again.error).toMatchObject({ status: 422, code: 'mfa_ip_address_mismatch' })
  })

  it('accepts the codes of the neighbouring 30-second steps and refuses others', async () => {
    const { auth, factorId, secret } = await enrolled()
    const wrong = await auth.mfa.challengeAndVerify({ factorId, code: codeFor(secret, 90) })
    expect(wrong.error).toMatchObject({ status: 422, code: 'mfa_verification_failed', message: 'Invalid TOTP code entered' })
    expect(wrong.data).toBeNull()
    expect((await auth.mfa.challengeAndVerify({ factorId, code: codeFor(secret, -30) })).error).toBeNull()
  })

  it('refuses an expired challenge and a challenge of another factor', async () => {
    const { auth, factorId, secret } = await enrolled()
    const challenge = await auth.mfa.challenge({ factorId })
    clock.advance(301_000)
    const late = await auth.mfa.verify({ factorId, challengeId: challenge.data!.id, code: codeFor(secret) })
    expect(late.error).toMatchObject({ status: 422, code: 'mfa_challenge_expired' })
    const other = await enrolled()
    const foreign = await other.auth.mfa.challenge({ factorId })
    expect(foreign.error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })
    const theirs = await other.auth.mfa.challenge({ factorId: other.factorId })
    const crossed = await auth.mfa.verify({ factorId, challengeId: theirs.data!.id, code: codeFor(secret) })
    expect(crossed.error).toMatchObject({ status: 422, code: 'mfa_factor_not_found' })
  })

  it('a sign-in after enrolment is aal1 with aal2 next; unenrolling or adding a factor then needs aal2', async () => {
    const { auth, email, password, factorId, secret } = await enrolled()
    expect((await auth.mfa.challengeAndVerify({ factorId, code: codeFor(secret) })).error).toBeNull()
    const later = client().auth
    expect((await later.signInWithPassword({ email, password })).error).toBeNull()
    expect((await later.mfa.getAuthenticatorAssuranceLevel()).data).toMatchObject({ currentLevel: 'aal1', nextLevel: 'aal2' })
    expect((await later.mfa.unenroll({ factorId })).error).toMatchObject({ status: 422, code: 'insufficient_aal' })
    expect((await later.mfa.enroll({ factorType: 'totp', friendlyName: 'second' })).error).toMatchObject({ status: 403, code: 'insufficient_aal' })
    clock.advance(30_000)
    expect((await later.mfa.challengeAndVerify({ factorId, code: codeFor(secret) })).error).toBeNull()
    expect((await later.mfa.unenroll({ factorId })).error).toBeNull()
    expect((await later.mfa.listFactors()).data!.all).toEqual([])
    // the session no longer counts the removed factor
    const refreshed = await later.refreshSession()
    expect(decodeJwt(refreshed.data.session!.access_token)).toMatchObject({ aal: 'aal1', amr: [{ method: 'password' }] })
  })

  it('refuses other factor types and bad requests in GoTrue’s words', async () => {
    const { auth, factorId } = await enrolled()
    expect((await auth.mfa.enroll({ factorType: 'phone', phone: '+22222000000' })).error).toMatchObject({ status: 422, code: 'mfa_phone_enroll_not_enabled' })
    expect((await auth.mfa.enroll({ factorType: 'webauthn' } as never)).error).toMatchObject({ status: 422, code: 'mfa_webauthn_enroll_not_enabled' })
    expect((await auth.mfa.challenge({ factorId: 'not-a-uuid' })).error).toMatchObject({ status: 404, code: 'validation_failed' })
    const challenge = await auth.mfa.challenge({ factorId })
    expect((await auth.mfa.verify({ factorId, challengeId: challenge.data!.id, code: '' })).error).toMatchObject({ status: 400, code: 'validation_failed' })
    // the anon key names no user
    expect((await client().auth.mfa.enroll({ factorType: 'totp' })).error).toMatchObject({ status: 403, code: 'bad_jwt' })
    // with TOTP turned off (config.toml auth.mfa.totp.enroll_enabled = false)
    const offAuth = createClient(off.url, anonKey, options).auth
    await offAuth.setSession((await auth.getSession()).data.session!)
    expect((await offAuth.mfa.enroll({ factorType: 'totp' })).error).toMatchObject({
      status: 422,
      code: 'mfa_totp_enroll_not_enabled',
      message: 'MFA enroll is disabled for TOTP',
    })
    expect((await offAuth.mfa.challenge({ factorId })).error).toMatchObject({ status: 422, code: 'mfa_totp_verify_not_enabled' })
  })

  it('limits challenges per client to GoTrue’s burst of 30, then its rate', async () => {
    const { auth: session, factorId } = await enrolled()
    const auth = createClient(slow.url, anonKey, options).auth
    await auth.setSession((await session.getSession()).data.session!)
    const statuses: (number | undefined)[] = []
    for (let i = 0; i < 31; i++) statuses.push((await auth.mfa.challenge({ factorId })).error?.status)
    expect(statuses.slice(0, 30).every((s) => s === undefined)).toBe(true)
    expect(statuses[30]).toBe(429)
    clock.advance(4_000) // one challenge back per 4 s
    expect((await auth.mfa.challenge({ factorId })).error).toBeNull()
    expect((await auth.mfa.challenge({ factorId })).error).toMatchObject({ status: 429, code: 'over_request_rate_limit' })
  })
})

describe('admin factor endpoints', () => {
  it('lists, renames and deletes a user’s factors; an unknown user or factor is 404', async () => {
    const { auth, factorId, secret } = await enrolled('Laptop')
    expect((await auth.mfa.challengeAndVerify({ factorId, code: codeFor(secret) })).error).toBeNull()
    const userId = (await auth.getUser()).data.user!.id
    const listed = await admin().mfa.listFactors({ userId })
    expect(listed.data!.factors).toEqual([expect.objectContaining({ id: factorId, status: 'verified', friendly_name: 'Laptop' })])
    const renamed = await fetch(`${gw.url}/auth/v1/admin/users/${userId}/factors/${factorId}`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${serviceKey}`, apikey: serviceKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ friendly_name: 'Old laptop' }),
    })
    expect(await renamed.json()).toMatchObject({ id: factorId, friendly_name: 'Old laptop' })
    const deleted = await admin().mfa.deleteFactor({ userId, id: factorId })
    // supabase-js hands GoTrue's body (the deleted factor) over under `data`
    expect(deleted.data).toMatchObject({ data: { id: factorId, factor_type: 'totp' } })
    expect((await admin().mfa.listFactors({ userId })).data!.factors).toEqual([])
    expect((await admin().mfa.deleteFactor({ userId, id: factorId })).error).toMatchObject({ status: 404, code: 'mfa_factor_not_found' })
    expect((await admin().mfa.listFactors({ userId: crypto.randomUUID() })).error).toMatchObject({ status: 404, code: 'user_not_found' })
    // the user's session was aal2 through that factor: it is aal1 again
    const refreshed = await auth.refreshSession()
    expect(decodeJwt(refreshed.data.session!.access_token)).toMatchObject({ aal: 'aal1' })
  })
})
