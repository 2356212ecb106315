// The local auth server against an attacker: recovery links and /verify send the browser (and the
// tokens in the fragment) only where GoTrue would — the site, loopback, or an allowed pattern — and
// sign-ins, sign-ups, refreshes, verifications and recoveries are rate-limited per client IP with
// GoTrue's defaults and its 429 body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { createTestApp, json, type TestApp } from './helpers/app.ts'
import { isRedirectAllowed, redirectGlob, redirectPolicy } from '../local-platform/auth/redirects.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'

let db: TestDatabase
const SITE = 'http://127.0.0.1:3000'
const API_VERSION = { 'X-Supabase-Api-Version': '2024-01-01' }

beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

describe("redirect patterns and the redirect rule (GoTrue's)", () => {
  it('compiles globs whose * and ? stop at "." and "/" while ** does not', () => {
    const cases: [string, string, boolean][] = [
      ['https://*.app.example/**', 'https://m.app.example/cb?x=1', true],
      ['https://*.app.example/**', 'https://a.b.app.example/cb', false],
      ['https://*.app.example/**', 'https://evil.example/?https://m.app.example/', false],
      ['http://localhost:3000/*', 'http://localhost:3000/reset', true],
      ['http://localhost:3000/*', 'http://localhost:3000/a/b', false],
      ['http://localhost:300?', 'http://localhost:3001', true],
      ['https://{a,b}.example.mr/**', 'https://b.example.mr/x', true],
      ['https://{a,b}.example.mr/**', 'https://c.example.mr/x', false],
      ['com.example.app://**', 'com.example.app://callback', true],
      ['https://app.example/[!x]', 'https://app.example/y', true],
      ['https://app.example/[!x]', 'https://app.example/x', false],
    ]
    for (const [pattern, url, expected] of cases) expect(redirectGlob(pattern).test(url), `${pattern} ~ ${url}`).toBe(expected)
  })

  it('allows the site, loopback and the patterns; refuses everything else', () => {
    const policy = redirectPolicy(SITE, ['https://*.app.example/**', 'com.example.app://**'])
    const allowed = [`${SITE}/reset`, 'http://127.0.0.1:4000/cb', 'http://[::1]:8080/', 'https://m.app.example/reset#x', 'com.example.app://callback']
    const refused = [
      'http://evil.example/',
      'https://evil.example/',
      'http://localhost:5173/', // a name, not the site's: GoTrue allows loopback addresses only as IP literals
      'javascript:alert(document.cookie)',
      'file:///etc/passwd',
      'data:text/html,<script>1</script>',
      '//evil.example/',
      '\thttp://127.0.0.1:3000/',
      'http://127.0.0.1:3000.evil.example/',
      'https://app.example/', // another host than the site's, on no pattern
      'http://10.0.0.1/',
      'http://3232235777/', // 192.168.1.1 in decimal
      'http://evil.example/#https://m.app.example/',
      'https://a.b.app.example/',
      '',
    ]
    for (const url of allowed) expect(isRedirectAllowed(policy, url), url).toBe(true)
    for (const url of refused) expect(isRedirectAllowed(policy, url), url).toBe(false)
    // a site on localhost: any port of it (a native app picks its own), but not another scheme
    const local = redirectPolicy('http://localhost:3000', [])
    expect(isRedirectAllowed(local, 'http://localhost:51234/cb')).toBe(true)
    expect(isRedirectAllowed(local, 'https://localhost:3000/cb')).toBe(false)
    // a site elsewhere: its own port only
    const hosted = redirectPolicy('https://app.example.mr', [])
    expect(isRedirectAllowed(hosted, 'https://app.example.mr/reset')).toBe(true)
    expect(isRedirectAllowed(hosted, 'https://app.example.mr:8443/reset')).toBe(false)
    expect(isRedirectAllowed(hosted, 'http://app.example.mr/reset')).toBe(false)
  })
})

describe('recovery links and /verify send the tokens only to allowed places', () => {
  let t: TestApp
  beforeAll(async () => {
    // one address recovered again and again: no minute between two emails here
    t = createTestApp({
      sql: db.sql,
      env: {
        AUTH_SITE_URL: SITE,
        AUTH_ADDITIONAL_REDIRECT_URLS: 'https://*.app.example/**',
        RATE_LIMIT_AUTH_PER_MINUTE: '1000',
        AUTH_EMAIL_MAX_FREQUENCY_SECONDS: '0',
      },
    })
  })

  async function recover(email: string, redirectTo: string): Promise<URL> {
    const before = t.logs.lines.length
    const res = await t.request('/auth/reset-password', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, redirect_to: redirectTo }),
    })
    expect(res.status).toBe(200)
    const line = t.logs.lines.slice(before).find((l) => typeof l.recovery_link === 'string')
    return new URL(line!.recovery_link as string)
  }

  async function verify(link: URL, redirectTo?: string): Promise<string> {
    const url = new URL(link)
    if (redirectTo !== undefined) url.searchParams.set('redirect_to', redirectTo)
    const res = await t.auth.request(`${url.pathname}${url.search}`)
    expect(res.status).toBe(303)
    return res.headers.get('location')!
  }

  it('replaces a foreign redirect_to by SITE_URL in the link, and again at /verify if the link is edited', async () => {
    const email = `r-${crypto.randomUUID().slice(0, 8)}@example.mr`
    expect(
      (await t.request('/auth/signup', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'secret-123', full_name: 'R' }),
      })).status,
    ).toBe(201)
    for (const evil of ['http://evil.example/', 'javascript:alert(1)', 'file:///etc/passwd']) {
      const link = await recover(email, evil)
      expect(link.searchParams.get('redirect_to')).toBe(SITE)
      // the attacker edits the link: /verify checks again
      const location = await verify(link, evil)
      expect(location.startsWith(`${SITE}#access_token=`), location).toBe(true)
    }
    // an allowed target keeps the tokens going there
    const link = await recover(email, 'https://m.app.example/reset')
    expect(link.searchParams.get('redirect_to')).toBe('https://m.app.example/reset')
    expect(await verify(link)).toMatch(/^https:\/\/m\.app\.example\/reset#access_token=/)
  })

  it('signs no banned user in: a recovery link sent before the ban is refused (403 user_banned), and so is a refresh', async () => {
    const email = `b-${crypto.randomUUID().slice(0, 8)}@example.mr`
    const signUp = await t.auth.request('/auth/v1/signup', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...API_VERSION },
      body: JSON.stringify({ email, password: 'secret-123' }),
    })
    const { user, refresh_token: refresh } = await json(signUp)
    const link = await recover(email, SITE)
    const service = { authorization: `Bearer ${await apiKey(LOCAL_JWT_SECRET, 'service_role')}`, 'content-type': 'application/json', ...API_VERSION }
    expect((await t.auth.request(`/auth/v1/admin/users/${user.id}`, { method: 'PUT', headers: service, body: JSON.stringify({ ban_duration: '24h' }) })).status)
      .toBe(200)
    const refused = await t.auth.request(`${link.pathname}${link.search}`)
    expect(refused.status).toBe(403)
    expect(await json(refused)).toEqual({ code: 403, error_code: 'user_banned', msg: 'User is banned' })
    expect(await db.sql`select count(*)::int as n from auth.sessions where user_id = ${user.id}`).toEqual([{ n: 0 }])
    // a ban written another way (SQL, a hosted dashboard) leaves the sessions: their refreshes end with it
    await db.sql`update auth.users set banned_until = null where id = ${user.id}`
    const signIn = await t.auth.request('/auth/v1/token?grant_type=password', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...API_VERSION },
      body: JSON.stringify({ email, password: 'secret-123' }),
    })
    const session = await json(signIn)
    await db.sql`update auth.users set banned_until = now() + interval '1 hour' where id = ${user.id}`
    // (the sign-up's session ended with the admin ban)
    for (const [token, code] of [[session.refresh_token, 'user_banned'], [refresh, 'refresh_token_not_found']]) {
      const res = await t.auth.request('/auth/v1/token?grant_type=refresh_token', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...API_VERSION },
        body: JSON.stringify({ refresh_token: token }),
      })
      expect(res.status).toBe(400)
      expect(await json(res)).toMatchObject({ code })
    }
    // the ban lifted, the same link signs the user in
    await db.sql`update auth.users set banned_until = null where id = ${user.id}`
    expect(await verify(link)).toMatch(new RegExp(`^${SITE}#access_token=`))
  })
})

describe("rate limits per client IP (GoTrue's defaults)", () => {
  let t: TestApp
  beforeAll(async () => {
    // X-Forwarded-For picks the client's address here, as behind a proxy
    t = createTestApp({ sql: db.sql, env: { TRUST_PROXY: 'true', RATE_LIMIT_AUTH_PER_MINUTE: '100000' } })
  })

  const auth = (path: string, ip: string, body: unknown, headers: Record<string, string> = {}) =>
    t.auth.request(`/auth/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip, ...API_VERSION, ...headers },
      body: JSON.stringify(body),
    })

  async function account(ip: string): Promise<{ email: string; refresh: string }> {
    const email = `l-${crypto.randomUUID().slice(0, 8)}@example.mr`
    const res = await auth('/signup', ip, { email, password: 'secret-123' })
    expect(res.status).toBe(200)
    return { email, refresh: (await res.json()).refresh_token }
  }

  it('counts an IPv6 /64 as one client: 30 sign-ins from 30 of its addresses use up its bucket', async () => {
    const { email } = await account('198.51.100.40')
    for (let i = 1; i <= 30; i++) {
      expect((await auth('/token?grant_type=password', `2001:db8:40:1::${i.toString(16)}`, { email, password: `wrong-${i}` })).status).toBe(400)
    }
    expect((await auth('/token?grant_type=password', '2001:db8:40:1:a:b:c:d', { email, password: 'secret-123' })).status).toBe(429)
    expect((await auth('/token?grant_type=password', '2001:db8:40:2::1', { email, password: 'secret-123' })).status).toBe(200)
  })

  it('30 wrong passwords from one address, then even the right one is refused (429 over_request_rate_limit) until the bucket refills', async () => {
    const { email } = await account('198.51.100.1')
    for (let i = 0; i < 30; i++) expect((await auth('/token?grant_type=password', '198.51.100.2', { email, password: `wrong-${i}` })).status).toBe(400)
    const limited = await auth('/token?grant_type=password', '198.51.100.2', { email, password: 'secret-123' })
    expect(limited.status).toBe(429)
    expect(await json(limited)).toEqual({ code: 'over_request_rate_limit', message: 'Request rate limit reached' })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    // another address is not concerned
    expect((await auth('/token?grant_type=password', '198.51.100.3', { email, password: 'secret-123' })).status).toBe(200)
    // nor is an address that only claims to be another through Sb-Forwarded-For (believed only in process from the service)
    expect((await auth('/token?grant_type=password', '198.51.100.2', { email, password: 'secret-123' }, { 'sb-forwarded-for': '203.0.113.99' })).status).toBe(
      429,
    )
    // 30 per 5 minutes: one every 10 s
    t.clock.advance(10_000)
    expect((await auth('/token?grant_type=password', '198.51.100.2', { email, password: 'secret-123' })).status).toBe(200)
    expect((await auth('/token?grant_type=password', '198.51.100.2', { email, password: 'secret-123' })).status).toBe(429)
    // the legacy error shape without the API version header
    const legacy = await t.auth.request('/auth/v1/token?grant_type=password', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.2' },
      body: JSON.stringify({ email, password: 'x' }),
    })
    expect(await json(legacy)).toEqual({ code: 429, error_code: 'over_request_rate_limit', msg: 'Request rate limit reached' })
  })

  it('counts recovery emails per client, and an address gets one a minute, with an account or without', async () => {
    const { email: victim } = await account('198.51.100.30')
    // one client asks for many addresses: 30 emails an hour (one every 2 minutes after a burst of 30), its
    // requests also limited to 30 per 5 minutes
    const address = () => `spent-${crypto.randomUUID().slice(0, 8)}@example.mr`
    for (let i = 0; i < 20; i++) expect((await auth('/recover', '198.51.100.31', { email: address() })).status).toBe(200)
    t.clock.advance(300_000)
    for (let i = 0; i < 12; i++) expect((await auth('/recover', '198.51.100.31', { email: address() })).status).toBe(200)
    const spent = await auth('/recover', '198.51.100.31', { email: address() })
    expect(spent.status).toBe(429)
    expect(await json(spent)).toEqual({ code: 'over_email_send_rate_limit', message: 'email rate limit exceeded' })
    // another client still gets its recovery
    expect((await auth('/recover', '198.51.100.32', { email: victim })).status).toBe(200)
    // a second email to one address within the minute is refused, whether it has an account or not
    const unknown = `nobody-${crypto.randomUUID().slice(0, 8)}@example.mr`
    expect((await auth('/recover', '198.51.100.33', { email: unknown })).status).toBe(200)
    for (const address of [victim, unknown]) {
      const again = await auth('/recover', '198.51.100.34', { email: address })
      expect(again.status, address).toBe(429)
      expect(await json(again), address).toEqual({
        code: 'over_email_send_rate_limit',
        message: expect.stringMatching(/^For security purposes, you can only request this after \d+ seconds\.$/),
      })
    }
    t.clock.advance(60_000)
    expect((await auth('/recover', '198.51.100.34', { email: victim })).status).toBe(200)
  })

  it('limits sign-ups, recoveries and verifications the same way; refreshes at 150 per 5 minutes', async () => {
    const ip = '198.51.100.10'
    for (let i = 0; i < 30; i++) {
      expect((await auth('/signup', ip, { email: `s${i}-${crypto.randomUUID().slice(0, 6)}@example.mr`, password: 'secret-123' })).status).toBe(200)
    }
    expect((await auth('/signup', ip, { email: 'one-more@example.mr', password: 'secret-123' })).status).toBe(429)
    expect((await auth('/recover', ip, { email: 'one-more@example.mr' })).status).toBe(429)
    const verifyIp = '198.51.100.11'
    for (let i = 0; i < 30; i++) {
      const res = await t.auth.request('/auth/v1/verify?type=recovery&token=not-a-real-token-0000', { headers: { 'x-forwarded-for': verifyIp } })
      expect(res.status).toBe(403)
    }
    expect((await t.auth.request('/auth/v1/verify?type=recovery&token=not-a-real-token-0000', { headers: { 'x-forwarded-for': verifyIp } })).status).toBe(429)
    // refresh: a burst of 30, then 150 per 5 minutes (one every 2 s)
    const { refresh } = await account('198.51.100.12')
    let token = refresh
    const refreshIp = '198.51.100.13'
    for (let i = 0; i < 30; i++) {
      const res = await auth('/token?grant_type=refresh_token', refreshIp, { refresh_token: token })
      expect(res.status).toBe(200)
      token = (await res.json()).refresh_token
    }
    expect((await auth('/token?grant_type=refresh_token', refreshIp, { refresh_token: token })).status).toBe(429)
    t.clock.advance(2_000)
    expect((await auth('/token?grant_type=refresh_token', refreshIp, { refresh_token: token })).status).toBe(200)
  })

  it("through the service's own /auth endpoints, each student is limited by their own address, and a 429 is ours", async () => {
    const { email } = await account('198.51.100.20')
    const signin = (ip: string, password: string) =>
      t.request('/auth/signin', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
        body: JSON.stringify({ email, password }),
      })
    for (let i = 0; i < 30; i++) expect((await signin('198.51.100.21', 'wrong-password')).status).toBe(401)
    const limited = await signin('198.51.100.21', 'secret-123')
    const body = await json(limited)
    expect(limited.status, JSON.stringify(body)).toBe(429)
    expect(body).toMatchObject({
      error: 'rate_limited',
      retry_after: expect.any(Number),
      limit: 30,
      window: '5m',
      request_id: limited.headers.get('x-request-id'),
    })
    // a classmate behind another address signs in
    expect((await signin('198.51.100.22', 'secret-123')).status).toBe(200)
  })
})

describe('the rate limits of password resets, each with its own window and wait', () => {
  let t: TestApp
  beforeAll(async () => {
    t = createTestApp({ sql: db.sql, env: { RATE_LIMIT_AUTH_PER_MINUTE: '1000', AUTH_EMAIL_MAX_FREQUENCY_SECONDS: '60' } })
  })
  const reset = (email: string, ip: string) =>
    t.request('/auth/reset-password', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: JSON.stringify({ email }),
    })

  it("says the seconds left of an address's minute between two emails, and a client's hourly emails refill one every two minutes", async () => {
    const email = `spaced-${crypto.randomUUID().slice(0, 8)}@example.mr`
    expect((await reset(email, '198.51.100.40')).status).toBe(200)
    t.clock.advance(45_000)
    const again = await reset(email, '198.51.100.41')
    const body = await json(again)
    expect(again.status).toBe(429)
    expect(again.headers.get('retry-after')).toBe('15')
    expect(body).toMatchObject({ error: 'rate_limited', retry_after: 15, limit: 1, window: '60s', auth_error: 'over_email_send_rate_limit' })
    t.clock.advance(15_000)
    expect((await reset(email, '198.51.100.41')).status).toBe(200)
    // one client, many addresses: 30 emails an hour, the next one back within 2 minutes (the bucket
    // refills one every 2 minutes: the wait said is the longest)
    let sent = 0
    while (sent < 40 && (await reset(`many-${sent}-${crypto.randomUUID().slice(0, 6)}@example.mr`, '198.51.100.42')).status === 200) sent++
    expect(sent).toBeLessThanOrEqual(30)
    // the requests' own limit (30 per 5 minutes) refills first: one every 10 s
    t.clock.advance(30_000)
    const spent = await reset(`many-${crypto.randomUUID().slice(0, 6)}@example.mr`, '198.51.100.42')
    expect(spent.status).toBe(429)
    expect(await json(spent)).toMatchObject({ retry_after: 120, limit: 30, window: '1h' })
    expect(spent.headers.get('retry-after')).toBe('120')
    t.clock.advance(120_000)
    expect((await reset(`many-${crypto.randomUUID().slice(0, 6)}@example.mr`, '198.51.100.42')).status).toBe(200)
  })
})

describe('an e-mail address is checked in time bounded by its 255 characters', () => {
  let t: TestApp
  beforeAll(async () => {
    t = createTestApp({ sql: db.sql })
  })

  it('answers a long run of dots after "@" (quadratic backtracking in the pattern) at once, with the usual 400', async () => {
    // 200,000 characters: checked by the pattern before its length, this took about 20 s, during which the
    // gateway answered no one
    const email = `a@${'.'.repeat(200_000)}@`
    const post = (path: string, body: unknown) =>
      t.auth.request(`/auth/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...API_VERSION }, body: JSON.stringify(body) })
    const started = performance.now()
    const signIn = await post('/token?grant_type=password', { email, password: 'secret-123' })
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(signIn.status).toBe(400)
    expect(await json(signIn)).toMatchObject({ code: 'invalid_credentials' })
    for (const [path, body] of [['/signup', { email, password: 'secret-123' }], ['/recover', { email }]] as const) {
      const before = performance.now()
      const res = await post(path, body)
      expect(performance.now() - before, path).toBeLessThan(2_000)
      expect(res.status, path).toBe(400)
      expect(await json(res), path).toMatchObject({ code: 'validation_failed' })
    }
  }, 60_000)
})
