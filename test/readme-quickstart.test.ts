// The app developers' guide (docs/app-developers.md), run word for word: the code blocks between each pair of
// its markers (`<!-- name:start -->`, `<!-- name:end -->`), in order, as one Node program with the .env lines
// `npm run status -- -o env` gives. The quickstart runs against a gateway with the demo portal; the
// conversations program against a gateway whose model writes slowly, through a proxy that really drops
// connections: it cuts the first streamed answer after two pieces of text, and loses the response to the
// first request with an Idempotency-Key.
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { seedDocument } from './helpers/corpus.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { type OpenAiServer, startOpenAiServer } from './helpers/openai-server.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { createLogRoot } from '../functions-shared/lib/logger.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { stackStatus, statusEnv } from '../scripts/lib/status.ts'

const root = new URL('..', import.meta.url).pathname
let db: TestDatabase
let gw: Gateway
let dataDir: string

/** The code of the guide's blocks between `<!-- name:start -->` and `<!-- name:end -->`, joined in order. */
async function guideProgram(name: string): Promise<string> {
  const guide = await readFile(join(root, 'docs', 'app-developers.md'), 'utf8')
  const region = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(guide)?.[1]
  expect(region, `the ${name} markers`).toBeDefined()
  const blocks = [...region!.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  expect(blocks.length, `the ${name} blocks`).toBeGreaterThan(0)
  return blocks.join('\n')
}

/** Runs a program as an app would (inside the repository, so `@supabase/supabase-js` resolves as installed). */
async function runProgram(name: string, code: string, env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  const dir = join(root, 'node_modules', '.cache', 'readme-quickstart')
  await mkdir(dir, { recursive: true })
  const file = join(dir, `${name}-${process.pid}.mjs`)
  await writeFile(file, code)
  const child = spawn(join(root, 'node_modules/.bin/node'), [file], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (err += d))
  const exit = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  await rm(file, { force: true })
  return { code: exit, out, err }
}

/** The .env lines of `npm run status -- -o env` for a gateway, as an object. */
async function dotEnv(gateway: Gateway): Promise<Record<string, string>> {
  return Object.fromEntries(
    statusEnv(await stackStatus(gateway.deps.config, { base: gateway.url }))
      .split('\n')
      .map((line) => /^(\w+)="(.*)"$/.exec(line)!.slice(1, 3) as [string, string]),
  )
}

beforeAll(async () => {
  db = await createTestDatabase()
  dataDir = await mkdtemp(join(tmpdir(), 'ct-quickstart-'))
  gw = await startGateway({
    config: testConfig({ LOG_LEVEL: 'silent', DEMO_PORTAL: 'on', DATA_DIR: dataDir, EXPIRY_INTERVAL_SECONDS: '0', PORT: '0' }),
    sql: db.sql,
    port: 0,
    deps: { logs: createLogRoot({ level: 'silent' }) },
  })
})
afterAll(async () => {
  await gw?.close()
  await db?.close()
  await rm(dataDir, { recursive: true, force: true })
})

describe("the app developers' quickstart (docs/app-developers.md)", () => {
  it('signs up, reads the profile through /rest/v1, invokes functions and streams a chat turn', async () => {
    const { code, out, err } = await runProgram('quickstart', await guideProgram('quickstart'), await dotEnv(gw))
    expect(code, `${out}\n${err}`).toBe(0)
    expect(out).toMatch(/profile \{\s+id: '[0-9a-f-]{36}',\s+full_name: 'Mariem',\s+role: 'student'\s+\}/)
    expect(out).toContain('textbooks 0')
    expect(out).toMatch(/sync completed \d+ found/)
    expect(out).toMatch(/\ndone \{\s+estimated: \d+/)
  }, 120_000)
})

interface Exchange {
  method: string
  path: string
  headers: IncomingHttpHeaders
  status?: number
  turnId?: string
  /** the ids of the SSE events that reached the client */
  ids: number[]
  deltas: number
  /** what the proxy did to it: a stream cut after two pieces of text, a response never delivered */
  dropped?: 'stream' | 'response'
}

/**
 * An HTTP proxy to `target` that drops connections for real: the first streamed POST /functions/v1/chat is
 * cut (its socket destroyed) once two `delta` events have reached the client, and the client's connection
 * of the first POST /functions/v1/chat with an Idempotency-Key is destroyed when its response comes (the
 * request reached the stack; its response is lost). Everything else passes; every exchange is logged.
 */
async function startDroppingProxy(target: string): Promise<{ url: string; log: Exchange[]; close: () => Promise<void> }> {
  const upstream = new URL(target)
  const log: Exchange[] = []
  let streamCut = false
  let responseLost = false
  const server: Server = createServer((req, res) => {
    const x: Exchange = { method: req.method!, path: req.url!, headers: req.headers, ids: [], deltas: 0 }
    log.push(x)
    const chat = req.method === 'POST' && new URL(req.url!, target).pathname === '/functions/v1/chat'
    const up = httpRequest(new URL(req.url!, target), { method: req.method, headers: { ...req.headers, host: upstream.host } }, (upRes) => {
      x.status = upRes.statusCode
      x.turnId = upRes.headers['x-turn-id'] as string | undefined
      if (chat && req.headers['idempotency-key'] && !responseLost) {
        responseLost = true
        x.dropped = 'response'
        upRes.resume()
        req.socket.destroy()
        return
      }
      res.writeHead(upRes.statusCode!, upRes.headers)
      if (!String(upRes.headers['content-type']).startsWith('text/event-stream')) return void upRes.pipe(res)
      const cut = chat && !streamCut
      if (cut) streamCut = true
      let buffer = ''
      upRes.setEncoding('utf8')
      upRes.on('data', (chunk: string) => {
        buffer += chunk
        for (let end = buffer.indexOf('\n\n'); end !== -1 && !res.destroyed; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end + 2)
          buffer = buffer.slice(end + 2)
          const id = /^id: (\d+)$/m.exec(block)?.[1]
          if (id) x.ids.push(Number(id))
          const delta = /^event: delta$/m.test(block)
          if (delta) x.deltas++
          if (cut && delta && x.deltas === 2) {
            x.dropped = 'stream'
            // the client gets this event, then its connection is gone (and so is the proxy's to the stack)
            res.write(block, () => {
              res.socket?.destroy()
              upRes.destroy()
            })
            return
          }
          res.write(block)
        }
      })
      upRes.on('end', () => res.end(buffer))
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

describe("the app developers' conversations, resumed streams, retries and cancels (docs/app-developers.md)", () => {
  /** The answer the model streams, one word every 40 ms (about 2 s); one line, so that the program prints it as is. */
  const ANSWER = Array.from({ length: 50 }, (_, i) => `étape${i}`).join(' ')
  let server: OpenAiServer
  let slow: Gateway
  let proxy: Awaited<ReturnType<typeof startDroppingProxy>>
  beforeAll(async () => {
    server = await startOpenAiServer()
    // the answer is streamed slowly; the rerank and translations (not streamed) get an empty answer and fall back
    server.chat = (body) => (body.stream ? { content: ANSWER, pieceDelayMs: 40 } : { content: '' })
    await seedDocument(db.sql, { name: 'Mathématiques 4AS', grade: '4AS', subject: 'mathematiques', language: 'fr', texts: FR_LESSON.split(/(?<=\.) /) })
    const ai = createOpenAiProvider({
      apiKey: 'k',
      baseUrl: server.url,
      chatModel: 'chat-model',
      embeddingModel: 'embed-model',
      rerankModel: 'rerank-model',
      translateModel: 'translate-model',
      dimension: 1536,
      timeoutMs: 60_000,
    })
    slow = await startGateway({
      config: testConfig({ LOG_LEVEL: 'silent', DATA_DIR: join(dataDir, 'slow'), EXPIRY_INTERVAL_SECONDS: '0', PORT: '0' }),
      sql: db.sql,
      port: 0,
      deps: { ai, logs: createLogRoot({ level: 'silent' }), sources: [] },
    })
    proxy = await startDroppingProxy(slow.url)
  })
  afterAll(async () => {
    await proxy?.close()
    await slow?.close()
    await server?.close()
  })

  it('lists and continues a conversation, resumes a cut stream, retries a lost request, cancels and deletes, charged once per turn', async () => {
    // the app reaches the stack through the proxy
    const env = Object.fromEntries(Object.entries(await dotEnv(slow)).map(([k, v]) => [k, v.replaceAll(slow.url, proxy.url)]))
    const { code, out, err } = await runProgram('conversations', await guideProgram('conversations'), env)
    expect(code, `${out}\n${err}`).toBe(0)
    await slow.deps.background.idle()
    const line = (label: string) => new RegExp(`^${label} (.*)$`, 'm').exec(out)?.[1]

    // 1. one conversation, continued on its lesson; listed with its messages
    const conversationId = line('conversation')!
    expect(conversationId).toMatch(/^[0-9a-f-]{36}$/)
    expect(line('follow-up in')).toBe(`${conversationId} on mathematiques`)
    expect(line('conversations')).toBe("[ 'Comment résoudre une équation du premier degré ?' ]")
    expect(line('messages')).toBe('student:sent teacher:answered student:sent teacher:answered')

    // 2. the stream was really cut after two pieces of text, and resumed after its last event's id: the
    //    text rebuilt is the model's answer, once, as the stack stored it
    const cut = proxy.log.filter((x) => x.dropped === 'stream')
    expect(cut).toHaveLength(1)
    const streamed = cut[0]!
    expect(streamed.deltas).toBe(2)
    const resumes = proxy.log.filter((x) =>
      x.method === 'GET' && x.path === `/functions/v1/chat/turns/${streamed.turnId}` && x.headers.accept === 'text/event-stream'
    )
    expect(resumes).toHaveLength(1)
    expect(resumes[0]!.headers['last-event-id']).toBe(String(streamed.ids.at(-1)))
    const ids = [...streamed.ids, ...resumes[0]!.ids]
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true)
    // resumed while the answer was still being written: followed live, more than one piece
    expect(resumes[0]!.deltas).toBeGreaterThan(1)
    expect(line('answer')).toBe(ANSWER)
    expect(line('streamed')).toMatch(/^done answered charged \d+$/)
    expect(line('stored')).toBe('answered the answer streamed')

    // 3. the first request with the key reached the stack and its response was lost; the retry is its turn
    const keyed = proxy.log.filter((x) => x.method === 'POST' && x.headers['idempotency-key'])
    expect(keyed.map((x) => x.dropped ?? x.status)).toEqual(['response', 200])
    expect(keyed[1]!.headers['idempotency-key']).toBe(keyed[0]!.headers['idempotency-key'])
    expect(keyed[0]!.turnId).toBeDefined()
    expect(line('asked')).toBe(`${keyed[0]!.turnId} answered replayed true`)

    // 4. stopped after its first words: cancelled, billed for what was generated
    const stopped = /^cancelled cancelled after (\d+) characters, charged (\d+)$/.exec(line('stopped') ?? '')
    expect(stopped, out).not.toBeNull()
    const [shown, charged] = [Number(stopped![1]), Number(stopped![2])]
    expect(shown).toBeGreaterThan(0)
    expect(shown).toBeLessThan(ANSWER.length)
    expect(charged).toBe(5 + Math.ceil(shown / 200))

    // 5. deleted with its messages; the money records stay: five turns, each reserved and charged once
    expect(line('deleted; conversations left')).toBe('0')
    const [turn] = await db.sql`select user_id from public.chat_turns where id = ${streamed.turnId!}`
    const userId = turn!.user_id as string
    expect(await db.sql`select id from public.conversations where user_id = ${userId}`).toEqual([])
    expect((await db.sql`select count(*)::int as n from public.chat_messages where conversation_id = ${conversationId}`)[0]!.n).toBe(0)
    const turns = await db.sql`select id, status from public.chat_turns where user_id = ${userId}`
    expect(turns.map((t) => t.status).sort()).toEqual(['answered', 'answered', 'answered', 'answered', 'cancelled'])
    const [m] = await db.sql`select w.token_balance::int as balance,
                                    (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id) as ledger,
                                    (select count(*)::int from public.reservations r where r.user_id = w.user_id) as reservations,
                                    (select count(*)::int from public.usage_log u where u.user_id = w.user_id) as usage,
                                    (select coalesce(sum(charged), 0)::int from public.usage_log u where u.user_id = w.user_id) as charged
                               from public.wallets w where w.user_id = ${userId}`
    expect(m).toEqual({ balance: 50 - m!.charged, ledger: 50 - m!.charged, reservations: 5, usage: 5, charged: m!.charged })
    // every answered turn is the model's whole answer, the cancelled one what was shown
    const characters = (await db.sql`select characters as n from public.usage_log where user_id = ${userId} order by id`).map((r) => r.n)
    expect(characters).toEqual([ANSWER.length, ANSWER.length, ANSWER.length, ANSWER.length, shown])
    expect(m!.charged).toBe(4 * (5 + Math.ceil(ANSWER.length / 200)) + charged)
  }, 120_000)
})
