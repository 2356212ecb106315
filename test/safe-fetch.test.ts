// Outbound downloads refuse what they must: schemes, hosts, private addresses in every spelling,
// redirects to them, oversized bodies (even when Content-Length lies), slow servers.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addressAllowed, FetchError, hostAllowed, safeFetch, type SafeFetchOptions, USER_AGENT } from '../functions-shared/net/safe-fetch.ts'
import { allowedHosts } from '../functions-shared/catalogue/sources.ts'
import { parseSources, SourceSchema } from '../functions-shared/sources-file.ts'
import { readFile } from 'node:fs/promises'
import { connectGuardNode } from '../scripts/lib/node-adapter.ts'

let server: Server
let base: string
let canaryHits = 0
const seenAgents: string[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seenAgents.push(String(req.headers['user-agent']))
    const url = new URL(req.url!, 'http://x')
    if (url.pathname === '/ok') return res.end('hello')
    if (url.pathname === '/canary') {
      canaryHits++
      return res.end('secret')
    }
    if (url.pathname === '/redirect') return res.writeHead(302, { location: url.searchParams.get('to')! }).end()
    if (url.pathname === '/loop') return res.writeHead(302, { location: '/loop' }).end()
    if (url.pathname === '/big') {
      res.writeHead(200, { 'content-length': '5000' })
      return res.end('x'.repeat(5000))
    }
    if (url.pathname === '/liar') {
      // says 10 bytes, sends 5000 (the client must count what arrives)
      res.writeHead(200, { 'content-length': '10' })
      res.write('x'.repeat(5000))
      return res.destroy()
    }
    if (url.pathname === '/chunked') {
      res.writeHead(200)
      for (let i = 0; i < 10; i++) res.write('x'.repeat(500))
      return res.end()
    }
    if (url.pathname === '/slow') return // never answers
    if (url.pathname === '/busy') return res.writeHead(503, { 'retry-after': '7' }).end()
    res.writeHead(404).end()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  server.close()
})

const loopbackResolver = async () => ['127.0.0.1']
const opts = (o: Partial<SafeFetchOptions> = {}): SafeFetchOptions => ({
  allowedHosts: '*',
  maxBytes: 1000,
  timeoutMs: 2000,
  resolve: loopbackResolver,
  allowLoopback: true,
  ...o,
})
const fails = async (p: Promise<unknown>) => {
  const err = await p.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(FetchError)
  return err as FetchError
}

describe('safeFetch', () => {
  it('downloads from an allowed host with the service User-Agent', async () => {
    const res = await safeFetch(`${base}/ok`, opts())
    expect(new TextDecoder().decode(res.bytes)).toBe('hello')
    expect(seenAgents.at(-1)).toBe(USER_AGENT)
  })

  it.each(['file:///etc/passwd', 'ftp://portal.example.mr/a.pdf', 'gopher://127.0.0.1:70/', 'data:text/plain,hi', 'javascript:alert(1)'])(
    'refuses the scheme of %s',
    async (url) => {
      expect((await fails(safeFetch(url, opts()))).kind).toBe('blocked')
    },
  )

  it('refuses hosts outside the source allowlist, and accepts subdomains of a "*." rule', async () => {
    expect((await fails(safeFetch('http://evil.example.com/a.pdf', opts({ allowedHosts: ['portal.example.mr'] })))).message).toMatch(/not allowed/)
    const ok = await safeFetch(`${base}/ok`, opts({ allowedHosts: [new URL(base).host] }))
    expect(ok.status).toBe(200)
    const sub = await fails(
      safeFetch('http://files.portal.example.mr/x', opts({ allowedHosts: ['*.portal.example.mr'], resolve: async () => ['10.0.0.1'], allowLoopback: false })),
    )
    expect(sub.message).toMatch(/non-public/) // allowed by the list, refused for its address
  })

  it("matches the port of an allowlist entry: without one, only the scheme's default port", async () => {
    const port = new URL(base).port
    const before = canaryHits
    expect((await fails(safeFetch(`${base}/canary`, opts({ allowedHosts: ['127.0.0.1'] })))).message).toMatch(/not allowed/)
    expect((await fails(safeFetch(`${base}/canary`, opts({ allowedHosts: ['127.0.0.1:1'] })))).message).toMatch(/not allowed/)
    expect(canaryHits).toBe(before)
    expect((await safeFetch(`${base}/ok`, opts({ allowedHosts: [`127.0.0.1:${port}`] }))).status).toBe(200)
    const allow = (url: string, list: string[]) => hostAllowed(new URL(url), list)
    expect(allow('https://portal.example.mr/a.pdf', ['portal.example.mr'])).toBe(true)
    expect(allow('http://portal.example.mr/a.pdf', ['portal.example.mr'])).toBe(true)
    expect(allow('https://portal.example.mr:443/a.pdf', ['portal.example.mr'])).toBe(true)
    expect(allow('https://portal.example.mr:8443/a.pdf', ['portal.example.mr'])).toBe(false)
    expect(allow('https://portal.example.mr:8443/a.pdf', ['portal.example.mr:8443'])).toBe(true)
    expect(allow('https://cdn.portal.example.mr:8443/a.pdf', ['*.portal.example.mr:8443'])).toBe(true)
    expect(allow('https://cdn.portal.example.mr/a.pdf', ['*.portal.example.mr:8443'])).toBe(false)
    expect(allow('https://evilportal.example.mr/a.pdf', ['*.portal.example.mr'])).toBe(false)
    expect(allow('http://[2001:db8::1]:8080/a.pdf', ['[2001:db8::1]:8080'])).toBe(true)
    expect(allow('http://[2001:db8::1]/a.pdf', ['[2001:db8::1]:8080'])).toBe(false)
    expect(allow('http://portal.example.mr/a.pdf', [])).toBe(false)
    expect(() => SourceSchema.parse({ name: 'x', index_urls: ['https://a.mr/'], allowed_hosts: [] })).toThrow()
    expect(() => SourceSchema.parse({ name: 'x', index_urls: ['https://a.mr/'], allowed_hosts: ['a.mr/path'] })).toThrow()
  })

  it("keeps the demo source to the gateway's own port: the database port next to it is refused", async () => {
    const text = await readFile(new URL('../config/scraper-sources.json', import.meta.url), 'utf8')
    const demo = parseSources(text, { PUBLIC_URL: 'http://127.0.0.1:54321', PUBLIC_HOST: '127.0.0.1:54321' }).find((s) => s.name === 'demo')!
    expect(hostAllowed(new URL('http://127.0.0.1:54321/demo-portal/fichiers/a.pdf'), allowedHosts(demo))).toBe(true)
    expect(hostAllowed(new URL('http://127.0.0.1:54322/'), allowedHosts(demo))).toBe(false)
    // a source without allowed_hosts: its index URLs' hosts with their ports
    const plain = SourceSchema.parse({ name: 'p', index_urls: ['http://127.0.0.1:8080/list.html', 'https://portal.example.mr/x'] })
    expect(allowedHosts(plain)).toEqual(['127.0.0.1:8080', 'portal.example.mr'])
  })

  it('refuses loopback unless allowed, and never contacts it', async () => {
    const before = canaryHits
    const err = await fails(safeFetch(`${base}/canary`, opts({ allowLoopback: false })))
    expect(err.kind).toBe('blocked')
    expect(canaryHits).toBe(before)
  })

  it('refuses private ranges even when loopback is allowed', async () => {
    for (const address of ['10.0.0.1', '192.168.1.20', '169.254.169.254', 'fd00::1']) {
      const err = await fails(safeFetch('http://portal.example.mr/a.pdf', opts({ allowLoopback: true, resolve: async () => [address] })))
      expect(err.kind, address).toBe('blocked')
    }
  })

  it('refuses a name that resolves to a private address', async () => {
    const err = await fails(
      safeFetch('http://portal.example.mr/a.pdf', opts({ allowLoopback: false, resolve: async () => ['93.184.216.34', '169.254.169.254'] })),
    )
    expect(err.message).toContain('169.254.169.254')
  })

  it('re-checks every redirect hop: a public page redirecting to loopback is refused before the canary is hit', async () => {
    const before = canaryHits
    // the first hop is "public" (the resolver says so); its redirect goes to 127.0.0.1
    const publicResolver = async (host: string) => (host === 'portal.example.mr' ? ['93.184.216.34'] : ['127.0.0.1'])
    const fetchImpl: typeof fetch = async (input, init) => {
      const u = new URL(String(input))
      if (u.hostname === 'portal.example.mr') return new Response(null, { status: 302, headers: { location: `${base}/canary` } })
      return fetch(input, init)
    }
    const err = await fails(safeFetch('http://portal.example.mr/index.pdf', opts({ allowLoopback: false, resolve: publicResolver, fetch: fetchImpl })))
    expect(err.kind).toBe('blocked')
    expect(canaryHits).toBe(before)
  })

  it('connects through the guard to the address it checked: a name no DNS knows reaches the address the resolver gave', async () => {
    const port = new URL(base).port
    const res = await safeFetch(
      `http://portal.test:${port}/ok`,
      opts({ guard: connectGuardNode, resolve: async (host) => (host === 'portal.test' ? ['127.0.0.1'] : []) }),
    )
    expect(new TextDecoder().decode(res.bytes)).toBe('hello')
    // without the guard, fetch asks the system's DNS, which does not know the name
    expect((await fails(safeFetch(`http://portal.test:${port}/ok`, opts({ resolve: async () => ['127.0.0.1'] })))).kind).toBe('network')
  })

  it('refuses a name whose DNS answer changes to loopback after the check (rebinding): the connection looks it up and checks again', async () => {
    const before = canaryHits
    // "localhost" answers public for the check, then loopback, as a rebinding DNS server does
    let lookups = 0
    const rebinding = async () => (lookups++ === 0 ? ['93.184.216.34'] : ['127.0.0.1'])
    const url = `http://localhost:${new URL(base).port}/canary`
    const err = await fails(safeFetch(url, opts({ allowLoopback: false, resolve: rebinding, guard: connectGuardNode })))
    expect(err.kind).toBe('blocked')
    expect(err.message).toMatch(/non-public address 127\.0\.0\.1/)
    expect(lookups).toBe(2)
    expect(canaryHits).toBe(before)
  })

  it('follows at most 5 redirects', async () => {
    expect((await safeFetch(`${base}/redirect?to=/ok`, opts())).url).toBe(`${base}/ok`)
    const loop = await fails(safeFetch(`${base}/loop`, opts()))
    expect(loop.message).toMatch(/too many redirects/)
    // the server's answer, not worth another try, and not a destination refused
    expect([loop.kind, loop.transient]).toEqual(['http', false])
    expect(loop.status).toBeGreaterThanOrEqual(300)
  })

  it('refuses bodies over the cap: declared, lying, and chunked', async () => {
    expect((await fails(safeFetch(`${base}/big`, opts()))).kind).toBe('too_large')
    // whichever notices first, the cap or the runtime's Content-Length check, the download fails
    expect(['too_large', 'network']).toContain((await fails(safeFetch(`${base}/liar`, opts()))).kind)
    const chunked = await fails(safeFetch(`${base}/chunked`, opts()))
    expect(chunked.kind).toBe('too_large')
  })

  it('gives up on a server that does not answer within the deadline', async () => {
    const err = await fails(safeFetch(`${base}/slow`, opts({ timeoutMs: 150 })))
    expect(err.kind).toBe('timeout')
    expect(err.transient).toBe(true)
  })

  it('reports HTTP errors with their status; 5xx and 429 are transient, 404 is not', async () => {
    const busy = await fails(safeFetch(`${base}/busy`, opts()))
    expect(busy).toMatchObject({ kind: 'http', status: 503, retryAfterMs: 7000 })
    expect(busy.transient).toBe(true)
    const missing = await fails(safeFetch(`${base}/missing`, opts()))
    expect(missing).toMatchObject({ kind: 'http', status: 404 })
    expect(missing.transient).toBe(false)
  })
})

describe('addressAllowed', () => {
  // Every spelling of a non-public address, as the URL parser and DNS hand them over.
  const refused = [
    '127.0.0.1',
    '::1',
    '::ffff:7f00:1',
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '169.254.169.254',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '100.64.0.1',
    'fd00::1',
    'fe80::1',
    '64:ff9b::a9fe:a9fe',
    '0.0.0.0',
    '::',
    '224.0.0.1',
    '255.255.255.255',
    'not-an-ip',
  ]
  it.each(refused)('refuses %s', (a) => expect(addressAllowed(a, false)).toBe(false))
  it.each(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:5db8:d822'])(
    'accepts the public %s',
    (a) => expect(addressAllowed(a, false)).toBe(true),
  )

  // IPv6 forms that carry an IPv4 address are judged by it (a review found ::a9fe:a9fe accepted)
  const carriers = [
    ['IPv4-compatible', '::a9fe:a9fe', '::5db8:d822'],
    ['IPv4-compatible, dotted', '::169.254.169.254', '::93.184.216.34'],
    ['IPv4-compatible loopback', '::7f00:1', null],
    ['IPv4-mapped', '::ffff:10.0.0.1', '::ffff:93.184.216.34'],
    ['IPv4-translated', '::ffff:0:a9fe:a9fe', '::ffff:0:5db8:d822'],
    ['NAT64', '64:ff9b::10.0.0.1', '64:ff9b::93.184.216.34'],
    ['NAT64 local use', '64:ff9b:1::5db8:d822', null],
    ['6to4', '2002:a9fe:a9fe::1', '2002:5db8:d822::1'],
    ['6to4 loopback', '2002:7f00:1::', null],
    // Teredo: server 65.54.227.120; the client is stored inverted (10.0.0.1 -> f5ff:fffe)
    ['Teredo, private client', '2001:0:4136:e378:8000:63bf:f5ff:fffe', '2001:0:4136:e378:8000:63bf:a247:2dcb'],
    ['Teredo, private server', '2001:0:a00:1:8000:63bf:a247:2dcb', null],
    ['ISATAP', 'fe80::5efe:a9fe:a9fe', null],
    ['ISATAP, global prefix', '2001:db8::200:5efe:a9fe:a9fe', null],
  ] as const
  it.each(carriers)('judges %s by the IPv4 address it carries', (_, bad, good) => {
    expect(addressAllowed(bad, false), bad).toBe(false)
    expect(addressAllowed(bad, true), bad).toBe(false)
    if (good) expect(addressAllowed(good, false), good).toBe(true)
  })

  it('sees through decimal, octal and hex IPv4 forms (the URL parser normalizes them)', async () => {
    for (const host of ['2130706433', '0177.0.0.1', '0x7f.1', '[::ffff:7f00:1]', '[::1]', '0.0.0.0']) {
      const err = await fails(safeFetch(
        `http://${host}/`,
        opts({
          allowLoopback: false,
          resolve: async () => {
            throw new Error('must not resolve an IP literal')
          },
        }),
      ))
      expect(err.kind, host).toBe('blocked')
    }
  })
})
