// POST /chat (Bearer): one turn with the AI teacher, as an SSE stream (`stream: true`, or no `stream`
// field and `Accept: text/event-stream`) or as one JSON body with the same data. Every turn belongs to a
// conversation and is stored as it is generated (turn-store.ts): GET /chat/turns/{id} reads it, replays
// its events after a Last-Event-ID and follows it to its end, from any process; POST
// /chat/turns/{id}/cancel stops it. A client that leaves does not stop its answer. An Idempotency-Key
// makes a retried POST the same turn.
import { chatRuntime } from './runtime.ts'
import { createRoute, z } from '@hono/zod-openapi'
import { type Deps, rateLimitClient } from '../deps.ts'
import { bearerSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { isPgError } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { completeTurn, prepareTurn, turnMeta } from './agent.ts'
import { finalizeTurn } from './settle.ts'
import { type ChatInput, type TurnContext, UNAVAILABLE_MESSAGE } from './turn.ts'
import { readTurn, settledTurn } from './turn-store.ts'
import { databaseTurnWrites, TurnRecorder } from './turn-recorder.ts'
import { type ConversationContext, loadConversation } from './conversation.ts'
import { chatRequestSchema, ChatResponse, IdempotencyKey, SSE_DESCRIPTION } from './schemas.ts'
import { addTurnRoutes, lastEventId, turnHeaders, turnJson, turnStream, userOf, wantsStream } from './turn-routes.ts'
import { canonicalJson, sha256Hex } from '../lib/hash.ts'

/** The most a retried request waits for the first request of its Idempotency-Key to begin its turn. */
const KEY_WAIT_MS = 30_000

export function chatRouter(deps: Deps) {
  const { user, limit } = guards(deps)
  const route = createRoute({
    method: 'post',
    path: '/',
    tags: ['chat'],
    summary: 'Ask the AI teacher',
    description:
      `One turn of a conversation: decide_path, check_wallet (reserve), retrieve_and_rerank, generate (or ask a clarifying question), finalize (settle). ${SSE_DESCRIPTION}`,
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
      402: jsonContent(
        ErrorSchema,
        'Insufficient balance (`estimated`, `token_balance`): nothing reserved, nothing charged. A balance below the cheapest turn (a clarifying question) is refused before the question is read',
      ),
      404: jsonContent(ErrorSchema, "Unknown or not ready textbook; a conversation that is not the user's"),
      409: jsonContent(ErrorSchema, 'The first request of this Idempotency-Key has not begun its turn within 30 s: retry'),
      422: jsonContent(ErrorSchema, 'idempotency_key_reused: this key was sent with another body in the last 24 hours'),
      503: jsonContent(ErrorSchema, `${UNAVAILABLE_MESSAGE} (the chat model failed or its circuit is open); nothing charged`),
      ...errorResponses.protected,
    },
  })

  const router = createRouter()
  router.use('/', user, limit('chat'))
  router.use('/turns/*', user, limit('turns'))

  router.openapi(route, async (c) => {
    const input = c.req.valid('json') as ChatInput & { stream?: boolean; conversation_id?: string }
    const userId = userOf(c)
    const requestId = c.get('requestId')
    if (input.conversation_id && input.history) {
      throw new ApiError(ErrorCode.BAD_REQUEST, 'A conversation keeps its own history: send conversation_id or history, not both', {
        details: { fields: [{ field: 'history', message: 'is not allowed with conversation_id' }] },
      })
    }
    const streaming = input.stream ?? wantsStream(c)
    const key = c.req.valid('header')['idempotency-key']
    const turnId: string = crypto.randomUUID()
    const live = chatRuntime(deps).live
    if (key) {
      const hash = sha256Hex(canonicalJson(input))
      const waitUntil = Date.now() + KEY_WAIT_MS
      for (;;) {
        const [claim] = await deps.sql<{ turn_id: string; request_hash: string; fresh: boolean }[]>`
          select * from public.claim_chat_idempotency(${userId}, ${key}, ${hash}, ${turnId})`
        if (claim!.fresh) break
        if (claim!.request_hash !== hash) {
          throw new ApiError(
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            'This Idempotency-Key was sent with another request in the last 24 hours: use a new key for a new question',
          )
        }
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
          throw new ApiError(ErrorCode.CONFLICT, 'The first request with this Idempotency-Key is still being decided: retry in a moment', {
            headers: { 'Retry-After': '1' },
          })
        }
        // the first request is still deciding its turn (or was refused and frees the key): wait for it
        await live.wait(claim!.turn_id, deps.config.CHAT_FOLLOW_POLL_MS).moved
      }
    }
    const ctx: TurnContext = { deps, rt: chatRuntime(deps), requestId, userId, turnId, clientKey: rateLimitClient(deps, c), log: c.get('log'), timings: {} }
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
      recorder = await TurnRecorder.begin(deps, live, chatRuntime(deps).writes ?? databaseTurnWrites(deps), ctx.log, {
        turnId,
        userId,
        conversationId: conversation?.id ?? null,
        reservationId: prepared.hold.reservation.id,
        requestId,
        question: input.message,
        meta: turnMeta(ctx, prepared),
        lesson: { grade: prepared.decision.grade ?? prepared.decision.inferredGrade ?? null, subject: prepared.decision.subject },
      })
    } catch (err) {
      // the turn could not begin (its conversation deleted meanwhile, the database out): its hold is released
      await finalizeTurn(ctx, prepared.decision, prepared.hold, {
        actual: 0,
        kind: 'released',
        characters: 0,
        model: null,
        outcome: 'failed',
        extra: { error: (err as Error).message },
      })
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
  addTurnRoutes(router, deps)
  return router
}
