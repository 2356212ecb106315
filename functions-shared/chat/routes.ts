// POST /chat (Bearer): one turn with the AI teacher, as an SSE stream (`stream: true`, or no `stream`
// field and `Accept: text/event-stream`) or as one JSON body with the same data. Every turn belongs to a
// conversation and is stored as it is generated (turn-store.ts): GET /chat/turns/{id} reads it, replays
// its events after a Last-Event-ID and follows it to its end, from any process; POST
// /chat/turns/{id}/cancel stops it. A client that leaves does not stop its answer. An Idempotency-Key
// makes a retried POST the same turn.
import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { Deps } from '../deps.ts'
import { bearerSecurity, createRouter } from '../http/router.ts'
import { ErrorSchema, errorResponses, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { isPgError } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { completeTurn, prepareTurn, turnMeta } from './agent.ts'
import { finalizeTurn } from './settle.ts'
import { UNAVAILABLE_MESSAGE, type ChatInput, type TurnContext } from './turn.ts'
import { sseResponse } from './sse.ts'
import { databaseTurnWrites, followTurn, loadConversation, readTurn, settledTurn, TurnRecorder, turnBody, type ConversationContext, type TurnState } from './turn-store.ts'
import { TIERS, TURN_STATUSES } from '../domain/enums.ts'
import { canonicalSubject, levelForm, MAX_GRADE_CHARS, namespaceSlug } from '../catalogue/namespace.ts'

const SourceSchema = z
  .object({
    n: z.number().int().openapi({ description: 'the citation number used in the answer as [n]' }),
    document_id: z.uuid(),
    title: z.string().nullable(),
    page_number: z.number().int(),
    chunk_id: z.string(),
    source_url: z.string().nullable().openapi({ description: 'the PDF with #page=N' }),
    score: z.number().openapi({ description: 'cosine similarity of the chunk to the (French) retrieval query' }),
    excerpt: z.string().openapi({ description: 'at most 280 characters of the chunk as written: the sentences that hold most of the question\'s words, with "… " where text was left out before and " …" after' }),
  })
  .openapi('ChatSource')

const UsageSchema = z
  .object({
    estimated: z.number().int(),
    actual: z.number().int(),
    charged: z.number().int(),
    refunded: z.number().int(),
    uncovered: z.number().int(),
    characters: z.number().int(),
    token_balance: z.number().int(),
  })
  .openapi('ChatUsage')

const ChatResponse = z
  .object({
    request_id: z.string().openapi({ description: 'the request that began the turn' }),
    turn_id: z.uuid().openapi({ description: 'the turn: GET /chat/turns/{turn_id} reads it again, resumes its stream, POST .../cancel stops it' }),
    conversation_id: z.uuid().nullable().openapi({ description: 'the conversation the turn belongs to (null once deleted)' }),
    status: z.enum(TURN_STATUSES).openapi({ description: 'streaming, answered, clarified, cancelled, failed (the service or the model failed: nothing charged), interrupted (the process generating it died: what was written is kept, nothing charged)' }),
    question: z.string().nullable(),
    path: z.enum(['answer', 'clarify']),
    reason: z.string(),
    language: z.enum(['fr', 'ar', 'hassaniya']),
    subject: z.string().nullable(),
    grade: z.string().nullable(),
    tier: z.enum(TIERS),
    hint_level: z.number().int(),
    reservation: z.object({ id: z.uuid(), estimated: z.number().int(), expires_at: z.string() }),
    answer: z.string(),
    sources: z.array(SourceSchema),
    retrieval: z
      .object({
        query: z.string().openapi({ description: 'the text the rerank read: the French translation of an Arabic or Hassaniya question when there is one, else the question' }),
        translated: z.boolean(),
        translation_failed: z.boolean(),
        cross_lingual: z
          .object({
            status: z.enum(['searched', 'unchanged', 'failed', 'not_possible', 'not_needed']),
            language: z.enum(['fr', 'ar']),
            query: z.string().nullable(),
          })
          .openapi({ description: 'the search of the question translated into the other curriculum language (ar for a French question, fr otherwise), fused with the search of the question: searched, unchanged (the translation was the same text), failed (the provider erred), not_possible (the provider cannot translate: offline), not_needed (document_language is the question\'s own language)' }),
        candidates: z.number().int(),
        rerank: z.string(),
      })
      .nullable(),
    outcome: z.string(),
    usage: UsageSchema.nullable(),
    model: z.string().nullable(),
    extractive: z.boolean().openapi({ description: 'true when the answer quotes the snippets (offline provider) instead of being written by a model' }),
    timings: z.record(z.string(), z.number()),
    error: z.object({ error: z.string(), message: z.string(), request_id: z.string() }).optional().openapi({ description: 'a failed or interrupted turn: why' }),
  })
  .partial({ outcome: true, model: true, extractive: true, timings: true })
  .openapi('ChatResponse')

export function chatRequestSchema(deps: Deps) {
  const { config } = deps
  return z
    .object({
      // something to read: a message of invisible characters only (zero-width and bidi marks, spaces of any
      // kind, Arabic vowel marks with no letter) was taken as small talk and charged the clarifying question
      message: z
        .string()
        .trim()
        .min(1)
        .max(config.CHAT_MESSAGE_MAX_CHARS)
        .regex(/[\p{L}\p{N}\p{P}\p{S}]/u, 'a message with a letter, digit, punctuation mark or symbol in it, not only invisible characters or marks')
        .openapi({ description: `the question, at most ${config.CHAT_MESSAGE_MAX_CHARS} characters, with a letter, digit, punctuation mark or symbol in it` }),
      language: z.enum(['fr', 'ar', 'hassaniya']).optional().openapi({ description: 'language of the question and the answer; detected from the script when absent' }),
      // a grade and a subject in the form the catalogue stores them, whatever the portal's or the student's
      // spelling: "5ème-AS", "5-as" and "5AS" are the level 5AS (levelForm); "Éducation islamique",
      // "tarbiya-islamiya", "التربية الإسلامية" are education-islamique, "SVT" sciences-naturelles (canonicalSubject)
      grade: z.string().trim().min(1).max(MAX_GRADE_CHARS).regex(/^[0-9A-Za-z-]+$/, 'a grade such as 7C or 4AS').overwrite((g) => levelForm(g) ?? g).optional(),
      subject: z
        .string()
        .max(128)
        .regex(/^[^\p{Cc}\p{Cs}]*$/u, 'a subject without control characters')
        .overwrite((s) => canonicalSubject(s) ?? namespaceSlug(s))
        .regex(/^[a-z][a-z0-9-]{0,63}$/, 'a subject in Latin letters such as mathematiques or sciences-naturelles')
        .optional()
        .openapi({ description: 'subject slug (mathematiques, physique, sciences-naturelles, education-islamique, arabe, histoire; accents, case, spaces and underscores are read as the slug: "Éducation islamique" is education-islamique; a portal\'s other slugs and the names in Arabic as the catalogue\'s: svt is sciences-naturelles, tarbiya-islamiya and التربية الإسلامية education-islamique); inferred from the question when absent' }),
      textbook_id: z.uuid().optional().openapi({ description: 'answer from this textbook only (a ready document)' }),
      document_language: z.enum(['fr', 'ar']).optional().openapi({ description: 'search only documents in this language' }),
      conversation_id: z.uuid().optional().openapi({ description: 'the conversation this question follows (its recent messages are the model\'s history, and a question that names no subject is about its lesson); without it, a new conversation is made' }),
      history: z
        .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().min(1).max(config.CHAT_HISTORY_MAX_CHARS) }).strict())
        .max(config.CHAT_HISTORY_MAX_MESSAGES)
        .optional()
        .openapi({ description: `earlier messages, oldest first (at most ${config.CHAT_HISTORY_MAX_MESSAGES}, each at most ${config.CHAT_HISTORY_MAX_CHARS} characters); refused with conversation_id, whose stored messages are the history` }),
      stream: z.boolean().optional().openapi({ description: 'true: SSE; false: JSON; absent: SSE when Accept includes text/event-stream' }),
    })
    .strict()
    .openapi('ChatRequest')
}

const SSE_DESCRIPTION = [
  'With `stream: true` (or no `stream` and `Accept: text/event-stream`): an SSE stream of events, each with an `id:`,',
  '`meta` (request id, turn_id, conversation_id, path, language, reservation), `sources` (the cited snippets, sent with the first text), `delta` ({text}),',
  'then `done` (outcome, usage with tokens charged and the balance after) or `error` ({error, message, request_id}).',
  'A comment line `: heartbeat` is sent after CHAT_HEARTBEAT_SECONDS without an event. The response headers X-Turn-Id and X-Conversation-Id name the turn before its first event.',
  'A client that leaves does not stop the answer: it is stored and billed, and GET /chat/turns/{turn_id} with `Last-Event-ID` resumes it.',
].join(' ')

/** The most a retried request waits for the first request of its Idempotency-Key to begin its turn. */
const KEY_WAIT_MS = 30_000

const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .optional()
  .openapi({ description: 'a key of the client\'s choosing (a UUID): the same key and body within 24 hours is the same turn, replayed or followed, with no second reservation; the same key with another body is 422 idempotency_key_reused. Per user.' })

const TurnParams = z.object({ turn_id: z.uuid().openapi({ param: { name: 'turn_id', in: 'path' } }) })

/** A request's body hashed in one form whatever the order of its keys. */
async function requestHash(input: unknown): Promise<string> {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, canonical(x)])) : v
  const bytes = new TextEncoder().encode(JSON.stringify(canonical(input)))
  return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('')
}

/** The Last-Event-ID a client resumes after (0: from the start). */
function lastEventId(c: Context): number {
  const raw = c.req.header('last-event-id')
  if (raw === undefined || raw.trim() === '') return 0
  if (!/^\d{1,15}$/.test(raw.trim())) throw new ApiError(ErrorCode.BAD_REQUEST, 'Last-Event-ID must be the id of an event of this turn (a whole number)')
  return Number(raw.trim())
}

const wantsStream = (c: Context) => (c.req.header('accept') ?? '').includes('text/event-stream')

/** The turn's events after `lastId`, then the live answer to its terminal event. */
function turnStream(c: Context, deps: Deps, userId: string, turnId: string, lastId: number, headers: Record<string, string> = {}): Response {
  const left = new AbortController()
  const log = c.get('log')
  return sseResponse({
    clock: deps.clock,
    heartbeatMs: deps.config.CHAT_HEARTBEAT_SECONDS * 1000,
    headers,
    // the client leaves: it stops following; the answer goes on
    onCancel: () => left.abort(),
    run: async (send) => {
      try {
        await followTurn(deps, deps.chat.live, userId, turnId, lastId, (e) => send(e.event, e.data, e.id), left.signal)
      } catch (err) {
        log.error({ turn_id: turnId, err: { message: (err as Error).message } }, 'following the turn failed')
        send('error', { error: ErrorCode.SERVICE_UNAVAILABLE, message: 'The answer could not be read; resume with GET /chat/turns/{turn_id} and Last-Event-ID', request_id: c.get('requestId') })
      }
    },
  })
}

/** A JSON client's turn once it has ended: its body, or its failure as the error it would have had. */
function turnJson(c: Context, state: TurnState, headers: Record<string, string>): Response {
  if (state.terminal?.event === 'error') {
    const f = state.terminal.data as { error: string; message: string }
    const code = f.error === ErrorCode.SERVICE_UNAVAILABLE || f.error === ErrorCode.BAD_REQUEST ? f.error : ErrorCode.INTERNAL_ERROR
    throw new ApiError(code, f.message, { details: { turn_id: state.turnId, conversation_id: state.conversationId, status: state.status }, headers })
  }
  for (const [k, v] of Object.entries(headers)) c.header(k, v)
  return c.json(turnBody(state), 200)
}

const turnHeaders = (state: { turnId: string; conversationId: string | null }) => ({ 'X-Turn-Id': state.turnId, ...(state.conversationId ? { 'X-Conversation-Id': state.conversationId } : {}) })

export function chatRouter(deps: Deps) {
  const { user, limit } = guards(deps)
  const route = createRoute({
    method: 'post',
    path: '/',
    tags: ['chat'],
    summary: 'Ask the AI teacher',
    description: `One turn of a conversation: decide_path, check_wallet (reserve), retrieve_and_rerank, generate (or ask a clarifying question), finalize (settle). ${SSE_DESCRIPTION}`,
    security: bearerSecurity,
    request: {
      headers: z.object({ 'idempotency-key': IdempotencyKey }),
      body: { content: { 'application/json': { schema: chatRequestSchema(deps) } }, required: true },
    },
    responses: {
      200: {
        description: 'The answer: JSON, or an SSE stream of the same data',
        content: { 'application/json': { schema: ChatResponse }, 'text/event-stream': { schema: z.string().openapi({ description: SSE_DESCRIPTION }) } },
      },
      402: jsonContent(ErrorSchema, 'Insufficient balance (`estimated`, `token_balance`): nothing reserved, nothing charged. A balance below the cheapest turn (a clarifying question) is refused before the question is read'),
      404: jsonContent(ErrorSchema, 'Unknown or not ready textbook; a conversation that is not the user\'s'),
      409: jsonContent(ErrorSchema, 'The first request of this Idempotency-Key has not begun its turn within 30 s: retry'),
      422: jsonContent(ErrorSchema, 'idempotency_key_reused: this key was sent with another body in the last 24 hours'),
      503: jsonContent(ErrorSchema, `${UNAVAILABLE_MESSAGE} (the chat model failed or its circuit is open); nothing charged`),
      ...errorResponses.protected,
    },
  })
  const getTurn = createRoute({
    method: 'get',
    path: '/turns/{turn_id}',
    tags: ['chat'],
    summary: 'Read a turn, or resume its stream',
    description: 'The stored turn (the owner\'s only): its status (streaming, answered, clarified, cancelled, failed, interrupted), the answer so far, its sources and usage. With `Accept: text/event-stream`: its SSE events after `Last-Event-ID` (all of them without it), then the live answer to its terminal event, the same events as the original stream, whichever process generates it.',
    security: bearerSecurity,
    request: { params: TurnParams, headers: z.object({ 'last-event-id': z.string().optional().openapi({ description: 'the id of the last event received' }) }) },
    responses: {
      200: {
        description: 'The turn, or its events',
        content: { 'application/json': { schema: ChatResponse }, 'text/event-stream': { schema: z.string().openapi({ description: SSE_DESCRIPTION }) } },
      },
      404: jsonContent(ErrorSchema, 'No such turn of this user (or its conversation was deleted)'),
      ...errorResponses.protected,
    },
  })
  const cancelTurn = createRoute({
    method: 'post',
    path: '/turns/{turn_id}/cancel',
    tags: ['chat'],
    summary: 'Stop a turn',
    description: 'Stops the answer from any process: the turn is billed for the characters generated until then (nothing before the first), and ends `cancelled`. Answers with the turn once it has ended (200), or 202 if it is still ending after 10 s.',
    security: bearerSecurity,
    request: { params: TurnParams },
    responses: {
      200: jsonContent(ChatResponse, 'The cancelled turn (also for a turn cancelled before)'),
      202: jsonContent(ChatResponse, 'The cancel is asked for; the turn has not ended yet'),
      404: jsonContent(ErrorSchema, 'No such turn of this user'),
      409: jsonContent(ErrorSchema, 'The turn had already ended (`status`)'),
      ...errorResponses.protected,
    },
  })

  const router = createRouter()
  router.use('/', user, limit('chat'))
  router.use('/turns/*', user, limit('turns'))
  const userOf = (c: Context): string => {
    const principal = c.get('principal')
    if (principal.kind !== 'user') throw new ApiError(ErrorCode.FORBIDDEN, 'This endpoint needs a user token')
    return principal.userId
  }

  router.openapi(route, async (c) => {
    const input = c.req.valid('json') as ChatInput & { stream?: boolean; conversation_id?: string }
    const userId = userOf(c)
    const requestId = c.get('requestId')
    if (input.conversation_id && input.history) {
      throw new ApiError(ErrorCode.BAD_REQUEST, 'A conversation keeps its own history: send conversation_id or history, not both', { details: { fields: [{ field: 'history', message: 'is not allowed with conversation_id' }] } })
    }
    const streaming = input.stream ?? wantsStream(c)
    const key = c.req.valid('header')['idempotency-key']
    let turnId: string = crypto.randomUUID()
    const live = deps.chat.live
    if (key) {
      const hash = await requestHash(input)
      const waitUntil = Date.now() + KEY_WAIT_MS
      for (;;) {
        const [claim] = await deps.sql<{ turn_id: string; request_hash: string; fresh: boolean }[]>`
          select * from public.claim_chat_idempotency(${userId}, ${key}, ${hash}, ${turnId})`
        if (claim!.fresh) break
        if (claim!.request_hash !== hash) throw new ApiError(ErrorCode.IDEMPOTENCY_KEY_REUSED, 'This Idempotency-Key was sent with another request in the last 24 hours: use a new key for a new question')
        const state = await readTurn(deps, live, userId, claim!.turn_id)
        if (state) {
          c.get('log').info({ turn_id: state.turnId, idempotency_key: key }, 'a retried request: its turn is replayed')
          // a retried stream may say what it received already (Last-Event-ID), as a resumed one does
          if (streaming) return turnStream(c, deps, userId, state.turnId, lastEventId(c), { ...turnHeaders(state), 'Idempotent-Replayed': 'true' }) as never
          const settled = (await settledTurn(deps, live, userId, state.turnId)) ?? state
          return turnJson(c, settled, { ...turnHeaders(settled), 'Idempotent-Replayed': 'true' }) as never
        }
        // a turn that began and whose messages are gone: its conversation was deleted
        const [begun] = await deps.sql<{ exists: boolean }[]>`
          select exists (select 1 from public.chat_turns t where t.id = ${claim!.turn_id} and t.user_id = ${userId}
                          and not exists (select 1 from public.chat_messages m where m.turn_id = t.id))`
        if (begun?.exists) throw new DomainError('not_found', `The turn of this Idempotency-Key (${claim!.turn_id}) is gone with its conversation`)
        if (Date.now() > waitUntil) {
          throw new ApiError(ErrorCode.CONFLICT, 'The first request with this Idempotency-Key is still being decided: retry in a moment', { headers: { 'Retry-After': '1' } })
        }
        // the first request is still deciding its turn (or was refused and frees the key): wait for it
        await live.wait(claim!.turn_id, deps.config.CHAT_FOLLOW_POLL_MS).moved
      }
    }
    const ctx: TurnContext = { deps, rt: deps.chat, requestId, userId, turnId, log: c.get('log'), timings: {} }
    const releaseKey = async () => {
      if (!key) return
      await deps.sql`select public.release_chat_idempotency(${userId}, ${turnId})`
      live.moved(turnId)
    }
    let conversation: ConversationContext | null = null
    let turnInput: ChatInput = input
    let prepared: Awaited<ReturnType<typeof prepareTurn>>
    try {
      if (input.conversation_id) {
        conversation = await loadConversation(deps, userId, input.conversation_id)
        turnInput = { ...input, history: conversation.history, conversation }
      }
      prepared = await prepareTurn(ctx, turnInput)
    } catch (err) {
      await releaseKey()
      throw err
    }
    let recorder: TurnRecorder
    try {
      recorder = await TurnRecorder.begin(deps, live, deps.chat.writes ?? databaseTurnWrites(deps), ctx.log, {
        turnId, userId, conversationId: conversation?.id ?? null, reservationId: prepared.hold.reservation.id, requestId, question: input.message, meta: turnMeta(ctx, prepared),
        lesson: { grade: prepared.decision.grade ?? prepared.decision.inferredGrade ?? null, subject: prepared.decision.subject },
      })
    } catch (err) {
      // the turn could not begin (its conversation deleted meanwhile, the database out): its hold is released
      await finalizeTurn(ctx, prepared.decision, prepared.hold, { actual: 0, kind: 'released', characters: 0, model: null, outcome: 'failed', extra: { error: (err as Error).message } })
      await releaseKey().catch(() => {})
      if (isPgError(err, 'PT404')) throw new DomainError('not_found', `Conversation ${input.conversation_id} was not found`)
      throw err
    }
    // the turn outlives its request: a client that leaves reads it later (awaited on shutdown; waitUntil on Supabase)
    deps.background.run(async () => {
      await completeTurn(ctx, turnInput, prepared, recorder, recorder.cancel.signal)
      await recorder.finished
    })
    const headers = turnHeaders(recorder.state)
    if (streaming) return turnStream(c, deps, userId, turnId, 0, headers) as never
    const state = (await settledTurn(deps, live, userId, turnId)) ?? recorder.state
    return turnJson(c, state, headers) as never
  })

  router.openapi(getTurn, async (c) => {
    const userId = userOf(c)
    const { turn_id: turnId } = c.req.valid('param')
    const after = lastEventId(c)
    const state = await readTurn(deps, deps.chat.live, userId, turnId)
    if (!state) throw new DomainError('not_found', `Turn ${turnId} was not found`)
    if (wantsStream(c)) return turnStream(c, deps, userId, turnId, after, turnHeaders(state)) as never
    return c.json(turnBody(state), 200) as never
  })

  router.openapi(cancelTurn, async (c) => {
    const userId = userOf(c)
    const { turn_id: turnId } = c.req.valid('param')
    const [row] = await deps.sql<{ status: string | null }[]>`select public.request_turn_cancel(${turnId}, ${userId}) as status`
    const status = row?.status ?? null
    if (status === null) throw new DomainError('not_found', `Turn ${turnId} was not found`)
    if (status !== 'streaming' && status !== 'cancelled') throw new DomainError('conflict', `The turn has already ended: ${status}`, { status })
    deps.chat.live.get(turnId)?.cancel.abort()
    const state = await settledTurn(deps, deps.chat.live, userId, turnId, AbortSignal.timeout(10_000))
    if (!state) throw new DomainError('not_found', `Turn ${turnId} was not found`)
    return c.json(turnBody(state), state.terminal ? 200 : 202) as never
  })
  return router
}
