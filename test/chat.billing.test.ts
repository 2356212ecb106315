// The chat's billing invariant: a turn that delivered answer text has exactly one settled reservation and
// one usage row, whatever the text (the model's or the student's), however it ended (answered, the
// client left, the model failed), and an answer that cannot be settled is not delivered. Over the real
// gateway on loopback, the real openai SDK against the OpenAI-compatible test server; on a PostgreSQL
// server the turns also run concurrently.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { createTestDatabase, type TestDatabase } from './helpers/db.ts'
import { testConfig } from './helpers/app.ts'
import { createUser, type TestUser } from './helpers/users.ts'
import { seedDocument } from './helpers/corpus.ts'
import { FR_LESSON } from './helpers/portal.ts'
import { type OpenAiServer, type Scripted, startOpenAiServer } from './helpers/openai-server.ts'
import { events, readSse } from './helpers/sse.ts'
import { type Gateway, startGateway } from '../scripts/lib/gateway.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { createOpenAiProvider } from '../functions-shared/ai/openai.ts'
import { expireReservations } from '../functions-shared/wallet/reservations.ts'

let db: TestDatabase
let server: OpenAiServer
let gw: Gateway
let script: (body: Record<string, any>) => Scripted = () => ({ content: 'Réponse [1].' })

beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 8 })
  await seedDocument(db.sql, { name: 'Mathématiques 4AS', grade: '4AS', subject: 'mathematiques', language: 'fr', texts: FR_LESSON.split(/(?<=\.) /) })
  server = await startOpenAiServer()
  server.chat = (body) => (body.model === 'chat-model' ? script(body) : body.model === 'rerank-model' ? { content: '{"ranking": [0, 1, 2]}' } : { content: '' })
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
  const config = testConfig({
    LOG_LEVEL: 'silent',
    EXPIRY_INTERVAL_SECONDS: '0',
    RATE_LIMIT_CHAT_PER_MINUTE: '100000',
    CIRCUIT_FAILURE_THRESHOLD: '100000',
    TIER_FREE_DAILY_LIMIT: '0',
  })
  gw = await startGateway({ config, sql: db.connect(4), port: 0, deps: { clock: new FakeClock(Date.now()), ai, sources: [] } })
})
afterAll(async () => {
  await gw?.close()
  await server?.close()
  await db?.close()
})

const chat = (user: TestUser, body: Record<string, unknown>) =>
  fetch(`${gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

const QUESTION = { message: "Comment isole-t-on l'inconnue dans une équation ?", grade: '4AS', subject: 'mathematiques' }

async function settlement(requestId: string) {
  const reservations = await db.sql`select status from public.reservations where request_id = ${requestId}`
  const usage = await db.sql`select kind, characters, model, charged from public.usage_log where request_id = ${requestId}`
  return { reservations: reservations.map((r) => r.status as string), usage }
}

describe('settlement does not depend on the text', () => {
  it('settles an answer whose text and model name hold NUL and unpaired surrogates', async () => {
    const user = await createUser(db.sql)
    const content = 'Réponse\u0000 avec \ud800 et \udfff [1].'
    script = () => ({ content, model: 'model\u0000\ud800' })
    for (const stream of [false, true]) {
      const res = await chat(user, { ...QUESTION, stream })
      expect(res.status).toBe(200)
      const requestId = res.headers.get('x-request-id')!
      if (stream) {
        const items = events(await readSse(res).rest())
        expect(items.at(-1)!.event).toBe('done')
        expect(items.at(-1)!.data.usage).not.toBeNull()
      } else {
        const body = await res.json()
        expect(body.answer.length).toBeGreaterThan(0)
        expect(body.usage).toMatchObject({ characters: [...body.answer].length })
      }
      await gw.deps.background.idle()
      const s = await settlement(requestId)
      expect(s.reservations).toEqual(['finalized'])
      expect(s.usage).toHaveLength(1)
      expect(s.usage[0]).toMatchObject({ kind: 'chat', model: 'model\ufffd\ufffd' })
      expect(s.usage[0]!.charged).toBeGreaterThan(0)
    }
  })

  it('settles a failed turn whose error message holds NUL at 0, with its usage row', async () => {
    // refused for what the prompt holds (400: the student is told to change it), or failing (500: retry)
    for (const [status, answered] of [[400, 400], [500, 503]] as const) {
      const user = await createUser(db.sql)
      script = () => ({ status, errorMessage: 'refused\u0000 \ud800' })
      const res = await chat(user, { ...QUESTION, stream: false })
      expect(res.status).toBe(answered)
      const s = await settlement(res.headers.get('x-request-id')!)
      expect(s.reservations).toEqual(['finalized'])
      expect(s.usage).toMatchObject([{ kind: 'released', charged: 0 }])
    }
  })

  it('does not deliver an answer it could not settle (the reservation outlived its TTL): JSON 503, SSE error', async () => {
    const user = await createUser(db.sql)
    for (const stream of [false, true]) {
      let release!: () => void
      const gate = new Promise<void>((r) => (release = r))
      script = () => ({ content: 'Une réponse qui arrive trop tard [1].', gate })
      const pending = chat(user, { ...QUESTION, stream })
      // the model is slow; meanwhile the expiry job runs past the reservation's TTL and refunds it
      await waitFor(async () => (await db.sql`select 1 from public.reservations where user_id = ${user.id} and status = 'reserved'`).length === 1)
      const expired = await expireReservations({ ctx: { deps: gw.deps, requestId: 'expiry' }, now: new Date(Date.now() + 3_600_000) })
      expect(expired.expired).toBe(1)
      release()
      const res = await pending
      const requestId = res.headers.get('x-request-id')!
      if (stream) {
        const items = events(await readSse(res).rest())
        expect(items.map((i) => i.event)).not.toContain('done')
        expect(items.at(-1)).toMatchObject({ event: 'error', data: { error: 'service_unavailable', request_id: requestId } })
      } else {
        expect(res.status).toBe(503)
        const body = await res.json()
        expect(body).toMatchObject({ error: 'service_unavailable', request_id: requestId })
        expect(body.answer).toBeUndefined()
      }
      await gw.deps.background.idle()
      const s = await settlement(requestId)
      expect(s.reservations).toEqual(['expired'])
      expect(s.usage.filter((u) => Number(u.charged) > 0)).toEqual([])
    }
    const [w] = await db
      .sql`select token_balance::int as b, (select sum(delta)::int from public.token_ledger where user_id = ${user.id}) as l from public.wallets where user_id = ${user.id}`
    expect(w).toEqual({ b: 50, l: 50 })
  })
})

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((r) => setImmediate(r))
  }
}

// ---- the invariant over a mix of turns

const ODD_TEXTS = [
  'Réponse simple [1].',
  'جواب: «الإسلام» والهمزة ؤ ئ إ أ [1].',
  '\u202eتجاوز\u202c RTL \u2066isolé\u2069 [1]',
  'emoji 👩🏽‍🏫 e\u0301 \u200d\u200b zéro [1]',
  'NUL\u0000 et \ud800 seuls [1].',
  'x'.repeat(3000),
]

type Turn = { kind: 'normal' | 'disconnect' | 'fail_before' | 'fail_midway'; text: number; oddModel: boolean; stream: boolean; student: number }

const turnArb: fc.Arbitrary<Turn> = fc.record({
  kind: fc.constantFrom('normal', 'normal', 'disconnect', 'fail_before', 'fail_midway'),
  text: fc.nat(ODD_TEXTS.length - 1),
  oddModel: fc.boolean(),
  stream: fc.boolean(),
  student: fc.nat(3),
})

/** One turn; returns its request id and whether answer text reached the client. */
async function runTurn(students: TestUser[], turn: Turn): Promise<{ requestId: string; delivered: boolean; kind: Turn['kind'] }> {
  const marker = crypto.randomUUID()
  const content = `${ODD_TEXTS[turn.text]} ${'mot '.repeat(40)}`
  const model = turn.oddModel ? { model: 'served\u0000\udc00' } : {}
  scripts.set(
    marker,
    turn.kind === 'fail_before'
      ? { status: 500, errorMessage: ODD_TEXTS[turn.text] }
      : turn.kind === 'fail_midway'
      ? { content, breakAfter: 3, ...model }
      : { content, pieceDelayMs: turn.kind === 'disconnect' ? 2 : 0, ...model },
  )
  const res = await chat(students[turn.student]!, { ...QUESTION, message: `${QUESTION.message} ${marker}`, stream: turn.stream })
  const requestId = res.headers.get('x-request-id')!
  if (res.status !== 200) return { requestId, delivered: false, kind: turn.kind }
  if (!turn.stream) {
    const body = await res.json()
    return { requestId, delivered: typeof body.answer === 'string' && body.answer.length > 0, kind: turn.kind }
  }
  const reader = readSse(res)
  let delivered = false
  for (let item = await reader.next(); item; item = await reader.next()) {
    if (item.kind === 'event' && item.event === 'delta' && item.data.text.length > 0) delivered = true
    if (delivered && turn.kind === 'disconnect') {
      await reader.cancel()
      break
    }
  }
  return { requestId, delivered, kind: turn.kind }
}

const scripts = new Map<string, Scripted>()

describe('the billing invariant', () => {
  it('every turn that delivered answer text has exactly one settled reservation with a usage row', async () => {
    script = (body) => {
      const marker = /[0-9a-f-]{36}/.exec(JSON.stringify(body.messages))?.[0]
      return (marker && scripts.get(marker)) || { content: 'Réponse [1].' }
    }
    const students = await Promise.all([0, 1, 2, 3].map(() => createUser(db.sql)))
    for (const s of students) await db.sql`select public.top_up(${s.id}, 100000, 1, 'MRU', 'cash', null, 'test', null, null, 50)`
    const turns = fc.sample(fc.array(turnArb, { minLength: 8, maxLength: 8 }), { numRuns: 6, seed: 20261122 })
    const outcomes: { requestId: string; delivered: boolean; kind: Turn['kind'] }[] = []
    // a batch at a time: concurrent on a server, queued on PGlite's one connection
    for (const batch of turns) outcomes.push(...(await Promise.all(batch.map((turn) => runTurn(students, turn)))))
    await gw.deps.background.idle()

    const delivered = outcomes.filter((o) => o.delivered)
    expect(delivered.length).toBeGreaterThan(20)
    for (const o of delivered) {
      const s = await settlement(o.requestId)
      expect(s.reservations, o.requestId).toEqual(['finalized'])
      expect(s.usage, o.requestId).toHaveLength(1)
    }
    // a client that left mid-answer did not stop it: the whole answer is stored, and billed as an answer
    const left = delivered.filter((o) => o.kind === 'disconnect')
    expect(left.length).toBeGreaterThan(0)
    for (const o of left) {
      const [row] = await db.sql`select u.characters, u.details ->> 'outcome' as outcome, m.content, m.status
                                   from public.usage_log u join public.chat_messages m on m.turn_id = (u.details ->> 'turn_id')::uuid and m.role = 'teacher'
                                  where u.request_id = ${o.requestId}`
      expect(row, o.requestId).toMatchObject({ outcome: 'answered', status: 'answered' })
      expect([...(row!.content as string)].length, o.requestId).toBe(row!.characters)
    }
    // nothing is left on hold, and every wallet equals the sum of its ledger
    const [held] = await db.sql`select count(*)::int as n from public.reservations where status = 'reserved'`
    expect(held!.n).toBe(0)
    const wallets = await db
      .sql`select w.user_id, w.token_balance::bigint as b, coalesce((select sum(l.delta) from public.token_ledger l where l.user_id = w.user_id), 0)::bigint as l
                                   from public.wallets w where w.user_id = any(${students.map((s) => s.id)})`
    for (const w of wallets) expect(w.b).toBe(w.l)
    // and every charge is one usage row's
    const [charges] = await db.sql`select (select coalesce(-sum(delta), 0) from public.token_ledger where reason = 'agent_chat' and user_id = any(${
      students.map((s) => s.id)
    }))::bigint as ledger,
                                          (select coalesce(sum(charged), 0) from public.usage_log where kind = 'chat' and user_id = any(${
      students.map((s) => s.id)
    }))::bigint as usage`
    expect(charges!.ledger).toBe(charges!.usage)
  })
})
