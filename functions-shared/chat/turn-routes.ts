// GET /chat/turns/{turn_id} and POST /chat/turns/{turn_id}/cancel: a stored turn read, its stream
// resumed after a Last-Event-ID and followed to its end from any process (turn-store.ts), or stopped; and
// the ways POST /chat answers with a turn (its stream, or its JSON once it has ended).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { Deps } from '../deps.ts'
import { bearerSecurity } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { DomainError } from '../domain/errors.ts'
import { serviceContext } from '../http/context.ts'
import { sseResponse } from './sse.ts'
import { cancelTurn, followTurn, readTurn } from './turn-store.ts'
import { turnBody, type TurnState } from './turn-state.ts'
import { ChatResponse, SSE_DESCRIPTION, TurnParams } from './schemas.ts'

/** The Last-Event-ID a client resumes after (0: from the start). */
export function lastEventId(c: Context): number {
  const raw = c.req.header('last-event-id')
  if (raw === undefined || raw.trim() === '') return 0
  if (!/^\d{1,15}$/.test(raw.trim())) throw new ApiError(ErrorCode.BAD_REQUEST, 'Last-Event-ID must be the id of an event of this turn (a whole number)')
  return Number(raw.trim())
}

export const wantsStream = (c: Context) => (c.req.header('accept') ?? '').includes('text/event-stream')

/** The turn's events after `lastId`, then the live answer to its terminal event. */
export function turnStream(c: Context, deps: Deps, userId: string, turnId: string, lastId: number, headers: Record<string, string> = {}): Response {
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
        await followTurn({ ctx: { deps }, input: { userId, turnId, lastId }, send: (e) => send(e.event, e.data, e.id), signal: left.signal })
      } catch (err) {
        log.error({ turn_id: turnId, err: { message: (err as Error).message } }, 'following the turn failed')
        send('error', {
          error: ErrorCode.SERVICE_UNAVAILABLE,
          message: 'The answer could not be read; resume with GET /chat/turns/{turn_id} and Last-Event-ID',
          request_id: c.get('requestId'),
        })
      }
    },
  })
}

/** A JSON client's turn once it has ended: its body, or its failure as the error it would have had. */
export function turnJson(c: Context, state: TurnState, headers: Record<string, string>): Response {
  if (state.terminal?.event === 'error') {
    const f = state.terminal.data as { error: string; message: string }
    const code = f.error === ErrorCode.SERVICE_UNAVAILABLE || f.error === ErrorCode.BAD_REQUEST ? f.error : ErrorCode.INTERNAL_ERROR
    throw new ApiError(code, f.message, { details: { turn_id: state.turnId, conversation_id: state.conversationId, status: state.status }, headers })
  }
  for (const [k, v] of Object.entries(headers)) c.header(k, v)
  return c.json(turnBody(state), 200)
}

export const turnHeaders = (state: { turnId: string; conversationId: string | null }) => ({
  'X-Turn-Id': state.turnId,
  ...(state.conversationId ? { 'X-Conversation-Id': state.conversationId } : {}),
})

/** The user of a route that needs a user's token. */
export function userOf(c: Context): string {
  const principal = c.get('principal')
  if (principal.kind !== 'user') throw new ApiError(ErrorCode.FORBIDDEN, 'This endpoint needs a user token')
  return principal.userId
}

/** The turn routes, on the chat's router (behind its user guard and the turns' rate limit). */
export function addTurnRoutes(router: OpenAPIHono, deps: Deps): void {
  const getTurn = createRoute({
    method: 'get',
    path: '/turns/{turn_id}',
    tags: ['chat'],
    summary: 'Read a turn, or resume its stream',
    description:
      "The stored turn (the owner's only): its status (streaming, answered, clarified, cancelled, failed, interrupted), the answer so far, its sources and usage. With `Accept: text/event-stream`: its SSE events after `Last-Event-ID` (all of them without it), then the live answer to its terminal event, the same events as the original stream, whichever process generates it.",
    security: bearerSecurity,
    request: {
      params: TurnParams,
      headers: z.object({ 'last-event-id': z.string().optional().openapi({ description: 'the id of the last event received' }) }),
    },
    responses: {
      200: {
        description: 'The turn, or its events',
        content: { 'application/json': { schema: ChatResponse }, 'text/event-stream': { schema: z.string().openapi({ description: SSE_DESCRIPTION }) } },
      },
      404: jsonContent(ErrorSchema, 'No such turn of this user (or its conversation was deleted)'),
      ...errorResponses.protected,
    },
  })
  const cancelRoute = createRoute({
    method: 'post',
    path: '/turns/{turn_id}/cancel',
    tags: ['chat'],
    summary: 'Stop a turn',
    description:
      'Stops the answer from any process: the turn is billed for the characters generated until then (nothing before the first), and ends `cancelled`. Answers with the turn once it has ended (200), or 202 if it is still ending after 10 s.',
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

  router.openapi(getTurn, async (c) => {
    const userId = userOf(c)
    const { turn_id: turnId } = c.req.valid('param')
    const after = lastEventId(c)
    const state = await readTurn({ ctx: serviceContext(deps, c), input: { userId, turnId } })
    if (!state) throw new DomainError('not_found', `Turn ${turnId} was not found`)
    if (wantsStream(c)) return turnStream(c, deps, userId, turnId, after, turnHeaders(state)) as never
    return c.json(turnBody(state), 200) as never
  })

  router.openapi(cancelRoute, async (c) => {
    const userId = userOf(c)
    const { turn_id: turnId } = c.req.valid('param')
    const state = await cancelTurn({ ctx: serviceContext(deps, c), input: { userId, turnId } })
    return c.json(turnBody(state), state.terminal ? 200 : 202) as never
  })
}
