// The Node gateway against clients that hold connections: a limit of open connections per client (a slow
// or idle client cannot take the descriptors every other client needs), and a deadline on the request line
// and headers, each answered in JSON with a request id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, type Socket } from 'node:net'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { connectionClient, MAX_PIPELINED_REQUESTS } from '../scripts/lib/gateway-connections.ts'
import { apiKey } from '../functions-shared/lib/keys.ts'
import { LOCAL_JWT_SECRET } from '../functions-shared/config.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'

let db: TestDatabase
const gateways: Gateway[] = []
const sockets: Socket[] = []

beforeAll(async () => {
  db = await createTestDatabase()
})

afterAll(async () => {
  for (const s of sockets) s.destroy()
  for (const g of gateways) await g.close(100)
  await db.close()
})

async function gateway(env: Record<string, string>): Promise<Gateway> {
  const gw = await startGateway({
    config: testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0', ...env }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }), sources: [] },
  })
  gateways.push(gw)
  return gw
}

/** A connection from `localAddress` that has sent `data`; resolves once it is open. */
function open(gw: Gateway, data: string, localAddress = '127.0.0.1'): Promise<Socket & { received: () => string; ended: Promise<void> }> {
  const { port } = new URL(gw.url)
  return new Promise((resolve, reject) => {
    let received = ''
    const s = connect({ port: Number(port), host: '127.0.0.1', localAddress })
    sockets.push(s)
    const ended = new Promise<void>((r) => s.once('close', () => r()))
    s.on('data', (d) => (received += d.toString()))
    s.once('error', reject)
    s.once('connect', () => {
      s.write(data)
      resolve(Object.assign(s, { received: () => received, ended }))
    })
  })
}

/** The parts of a raw HTTP/1.1 answer. */
function parse(raw: string): { status: number; headers: string; body: Record<string, unknown> } {
  const [head = '', body = ''] = raw.split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) }
}

const SLOW_HEADERS = 'GET /functions/v1/health HTTP/1.1\r\nHost: x\r\n' // no blank line: the headers never end

describe('connectionClient', () => {
  it('counts an IPv4 address alone, all of loopback as one client and an IPv6 address by its /64', () => {
    expect(connectionClient('203.0.113.7')).toBe('203.0.113.7')
    expect(connectionClient('::ffff:203.0.113.7')).toBe('203.0.113.7')
    for (const a of ['127.0.0.1', '127.0.0.2', '127.255.0.9', '::1', '::ffff:127.0.0.5', '0:0:0:0:0:0:0:1']) expect(connectionClient(a), a).toBe('loopback')
    expect(connectionClient('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(connectionClient('2001:db8:0:0:ffff::2')).toBe('2001:db8:0:0::/64')
    expect(connectionClient('2001:0DB8:0000:0000:1:2:3:4%eth0')).toBe('2001:db8:0:0::/64')
    expect(connectionClient('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64')
    expect(connectionClient(undefined)).toBe('unknown')
  })
})

describe('open connections per client', () => {
  it("answers a connection past CONNECTION_LIMIT_PER_CLIENT with a 429 in the rate limit's shape, whatever loopback address it comes from, and serves again once one closes", async () => {
    const gw = await gateway({ CONNECTION_LIMIT_PER_CLIENT: '4' })
    const held = await Promise.all([1, 2, 3, 4].map(() => open(gw, SLOW_HEADERS)))
    for (const localAddress of ['127.0.0.1', '127.0.0.2']) {
      const extra = await open(gw, '', localAddress)
      await extra.ended
      const res = parse(extra.received())
      expect(res.status).toBe(429)
      expect(res.body).toMatchObject({
        error: 'rate_limited',
        message: expect.stringMatching(/connections.*4 at most/),
        retry_after: 1,
        limit: 4,
        window: 'concurrent',
      })
      expect(res.headers).toContain(`x-request-id: ${res.body.request_id}`)
      expect(res.headers).toContain('retry-after: 1')
    }
    const refused = await fetch(`${gw.url}/functions/v1/health`)
    expect(refused.status).toBe(429)
    expect((await refused.json()).request_id).toBe(refused.headers.get('x-request-id'))
    held[0]!.destroy()
    await held[0]!.ended
    // the server learns of the close on its side a moment later
    let status = 0
    for (let i = 0; i < 100 && status !== 200; i++) status = (await fetch(`${gw.url}/functions/v1/health`, { headers: { Connection: 'close' } })).status
    expect(status).toBe(200)
  })

  it('never lets the request of a refused connection reach the app', async () => {
    const gw = await gateway({ CONNECTION_LIMIT_PER_CLIENT: '1' })
    await open(gw, SLOW_HEADERS)
    const anon = await apiKey(LOCAL_JWT_SECRET, 'anon')
    const email = `refused-${Date.now()}@example.com`
    const body = JSON.stringify({ email, password: 'secret-123' })
    const signup = await open(
      gw,
      `POST /auth/v1/signup HTTP/1.1\r\nHost: x\r\napikey: ${anon}\r\nContent-Type: application/json\r\nContent-Length: ${
        Buffer.byteLength(body)
      }\r\n\r\n${body}`,
    )
    await signup.ended
    expect(parse(signup.received()).status).toBe(429)
    expect(await db.sql`select 1 from auth.users where email = ${email}`).toHaveLength(0)
  })

  it("has no limit behind a proxy (TRUST_PROXY: every connection is the proxy's) or at 0", async () => {
    for (const env of [{ CONNECTION_LIMIT_PER_CLIENT: '1', TRUST_PROXY: 'true' }, { CONNECTION_LIMIT_PER_CLIENT: '0' }] as Record<string, string>[]) {
      const gw = await gateway(env)
      await Promise.all([1, 2, 3].map(() => open(gw, SLOW_HEADERS)))
      expect((await fetch(`${gw.url}/functions/v1/health`)).status).toBe(200)
    }
  })
})

describe('request targets that are no path', () => {
  it('answers OPTIONS * with 204 and Allow, and another target that is no path with 400 in JSON with a request id; a path or an absolute URL is served', async () => {
    const gw = await gateway({})
    const ask = async (requestLine: string) => {
      const s = await open(gw, `${requestLine}\r\nHost: x\r\nConnection: close\r\n\r\n`)
      await s.ended
      const [head = '', body = ''] = s.received().split('\r\n\r\n')
      return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body }
    }
    const options = await ask('OPTIONS * HTTP/1.1')
    expect(options.status).toBe(204)
    expect(options.headers).toContain('allow: get, head, post, put, patch, delete, options')
    expect(options.headers).toMatch(/x-request-id: [0-9a-f-]{36}/)
    for (const line of ['GET * HTTP/1.1', 'GET functions/v1/health HTTP/1.1']) {
      const bad = await ask(line)
      expect(bad.status, line).toBe(400)
      const body = JSON.parse(bad.body) as Record<string, string>
      // Node's parser refuses a target with no slash itself (clientError): the same answer, its message its own
      expect(body).toMatchObject({ error: 'bad_request', message: line.includes('*') ? expect.stringContaining('must be a path') : expect.any(String) })
      expect(bad.headers).toContain(`x-request-id: ${body.request_id}`)
    }
    expect((await ask('GET /functions/v1/health HTTP/1.1')).status).toBe(200)
    expect((await ask(`GET ${gw.url}/functions/v1/health HTTP/1.1`)).status).toBe(200)
  })
})

describe('slow headers', () => {
  it('closes a connection whose headers have not ended after HEADERS_TIMEOUT_MS, with a 408 in JSON', async () => {
    const gw = await gateway({ HEADERS_TIMEOUT_MS: '1000' })
    const slow = await open(gw, SLOW_HEADERS)
    const started = performance.now()
    // one more header line now and then does not keep it open
    const drip = setInterval(() => slow.writable && slow.write('X-Drip: 1\r\n'), 200)
    await slow.ended
    clearInterval(drip)
    const res = parse(slow.received())
    expect(res.status).toBe(408)
    expect(res.body).toMatchObject({ error: 'request_timeout' })
    expect(res.headers).toContain(`x-request-id: ${res.body.request_id}`)
    // a liveness bound: Node checks the deadline every quarter of it here
    expect(performance.now() - started).toBeLessThan(10_000)
    expect((await fetch(`${gw.url}/functions/v1/health`)).status).toBe(200)
  })
})

describe('bodies read before any route', () => {
  it("holds a JSON body to BODY_LIMIT_BYTES on the upload's path too: a client without a token can no longer make the server take UPLOAD_MAX_BYTES of it for a 401", async () => {
    const gw = await gateway({ BODY_LIMIT_BYTES: '1024', UPLOAD_MAX_BYTES: '1000000' })
    const size = 200_000
    const request = `POST /functions/v1/admin/upload-curriculum HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`
    const s = await open(gw, request)
    s.on('error', () => {})
    // as much as the socket takes; the server answers once the limit is passed, and ends the connection
    s.write(`{"x":"${'a'.repeat(size - 8)}"}`)
    await s.ended
    const [head = '', body = ''] = s.received().split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 413 /)
    expect(head.toLowerCase()).toContain('connection: close')
    expect(body).toContain('"error":"payload_too_large"')
    // a multipart body on that path is still the upload's: past BODY_LIMIT_BYTES, the route's own guard answers
    const form = await open(
      gw,
      `POST /functions/v1/admin/upload-curriculum HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 2000\r\nConnection: close\r\n\r\n${
        'a'.repeat(2000)
      }`,
    )
    await form.ended
    expect(form.received()).toMatch(/^HTTP\/1\.1 401 /)
  })
})

describe('answers left unread', () => {
  const BUNDLE = 'GET /functions/v1/docs/assets/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'

  it('closes a connection whose client reads nothing of its answers for SEND_TIMEOUT_MS, instead of keeping them in memory for ever', async () => {
    const gw = await gateway({ SEND_TIMEOUT_MS: '300' })
    const accepted = new Promise<Socket>((r) => gw.server.once('connection', r))
    const s = await open(gw, BUNDLE.repeat(8))
    s.pause() // reads nothing: 8 × 1.7 MB wait beyond what the kernel's buffers take
    const ours = await accepted
    const started = performance.now()
    const closed = await Promise.race([
      new Promise<true>((r) => ours.once('close', () => r(true))),
      new Promise<false>((r) => setTimeout(() => r(false), 10_000)),
    ])
    expect(closed).toBe(true)
    expect(performance.now() - started).toBeLessThan(5_000)
    // what had left before is still delivered; the rest never is
    s.resume()
    await s.ended
    expect(s.received().match(/HTTP\/1\.1 200 OK/g)?.length ?? 0).toBeLessThan(8)
    expect((await fetch(`${gw.url}/functions/v1/health`)).status).toBe(200)
  })

  it('does not cut a client that keeps reading, however slowly its answers leave (64 KB every 10 ms)', async () => {
    const gw = await gateway({ SEND_TIMEOUT_MS: '1000' })
    const s = await open(gw, BUNDLE.repeat(3) + 'GET /functions/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    // in paused mode the socket takes from the network only what it is asked to read: 64 KB every 10 ms,
    // so the four answers (5.2 MB) take about SEND_TIMEOUT_MS to leave, in bursts
    s.pause()
    let raw = ''
    const reader = setInterval(() => {
      const chunk = s.read(Math.min(65_536, s.readableLength || 65_536)) as Buffer | null
      if (chunk) raw += chunk.toString()
    }, 10)
    await s.ended
    clearInterval(reader)
    expect(raw.match(/HTTP\/1\.1 200 OK/g)?.length).toBe(4)
    expect(raw).toContain('"status":"ok"')
  })
})

describe('pipelined requests', () => {
  const HEALTH = 'GET /functions/v1/health HTTP/1.1\r\nHost: x\r\n\r\n'
  const LAST = 'GET /functions/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'

  it(`serves up to ${MAX_PIPELINED_REQUESTS} requests sent ahead on one connection, and closes one that sends more before reading its answers`, async () => {
    const gw = await gateway({})
    const few = await open(gw, HEALTH.repeat(MAX_PIPELINED_REQUESTS - 1) + LAST)
    await few.ended
    expect(few.received().match(/HTTP\/1\.1 200 OK/g)?.length).toBe(MAX_PIPELINED_REQUESTS)
    // 100 requests in one packet: Node would serve them all at once and keep every answer until read
    const many = await open(gw, HEALTH.repeat(99) + LAST)
    await many.ended
    expect(many.received().match(/HTTP\/1\.1 200 OK/g)?.length ?? 0).toBeLessThanOrEqual(MAX_PIPELINED_REQUESTS)
    expect((await fetch(`${gw.url}/functions/v1/health`)).status).toBe(200)
  })
})
