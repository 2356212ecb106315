// POST /chat (Bearer): one turn with the AI teacher, as an SSE stream (`stream: true`, or no `stream`
// field and `Accept: text/event-stream`) or as one JSON body with the same data. Every turn belongs to a
// conversation and is stored as it is generated (turn-store.ts): GET /chat/turns/{id} reads it, replays
// its events after a Last-Event-ID and follows it to its end, from any process; POST
// /chat/turns/{id}/cancel stops it. A client that leaves does not stop its answer. An Idempotency-Key
// makes a retried POST the same turn.
import { createRoute, z } from '@hono/zod-openapi'
import { type Deps, rateLimitClient } from '../deps.ts'
import { bearerSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { serviceContext } from '../http/context.ts'
import { type ChatInput, UNAVAILABLE_MESSAGE } from './turn.ts'
import { settledTurn } from './turn-store.ts'
import { askQuestion } from './ask.ts'
import { chatRequestSchema, ChatResponse, IdempotencyKey, SSE_DESCRIPTION } from './schemas.ts'
import { addTurnRoutes, lastEventId, turnHeaders, turnJson, turnStream, userOf, wantsStream } from './turn-routes.ts'

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
    const question = c.req.valid('json') as ChatInput & { stream?: boolean; conversation_id?: string }
    const userId = userOf(c)
    const streaming = question.stream ?? wantsStream(c)
    const ctx = { ...serviceContext(deps, c), clientKey: rateLimitClient(deps, c) }
    const asked = await askQuestion({ ctx, input: { user_id: userId, question, idempotency_key: c.req.valid('header')['idempotency-key'] } })
    const replayed: Record<string, string> = asked.replayed ? { 'Idempotent-Replayed': 'true' } : {}
    // a retried stream may say what it received already (Last-Event-ID), as a resumed one does
    if (streaming) return turnStream(c, deps, userId, asked.turnId, asked.replayed ? lastEventId(c) : 0, { ...turnHeaders(asked.state), ...replayed }) as never
    const state = (await settledTurn({ ctx, input: { userId, turnId: asked.turnId } })) ?? asked.state
    return turnJson(c, state, { ...turnHeaders(state), ...replayed }) as never
  })
  addTurnRoutes(router, deps)
  return router
}
