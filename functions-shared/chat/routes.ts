// POST /chat (Bearer): one turn with the AI teacher, as an SSE stream (`stream: true`, or no `stream`
// field and `Accept: text/event-stream`) or as one JSON body with the same data.
import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import type { Deps } from '../deps.ts'
import { bearerSecurity, createRouter } from '../http/router.ts'
import { ErrorSchema, errorResponses, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { completeTurn, prepareTurn } from './agent.ts'
import { UNAVAILABLE_MESSAGE, type ChatInput, type TurnContext, type TurnSink } from './turn.ts'
import { sseResponse } from './sse.ts'
import { TIERS } from '../domain/enums.ts'
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
    request_id: z.string(),
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
  })
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
      history: z
        .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().min(1).max(config.CHAT_HISTORY_MAX_CHARS) }).strict())
        .max(config.CHAT_HISTORY_MAX_MESSAGES)
        .optional()
        .openapi({ description: `earlier messages, oldest first (at most ${config.CHAT_HISTORY_MAX_MESSAGES}, each at most ${config.CHAT_HISTORY_MAX_CHARS} characters)` }),
      stream: z.boolean().optional().openapi({ description: 'true: SSE; false: JSON; absent: SSE when Accept includes text/event-stream' }),
    })
    .strict()
    .openapi('ChatRequest')
}

const SSE_DESCRIPTION = [
  'With `stream: true` (or no `stream` and `Accept: text/event-stream`): an SSE stream of events',
  '`meta` (request id, path, language, reservation), `sources` (the cited snippets, sent with the first text), `delta` ({text}),',
  'then `done` (outcome, usage with tokens charged and the balance after) or `error` ({error, message, request_id}).',
  'A comment line `: heartbeat` is sent after CHAT_HEARTBEAT_SECONDS without an event.',
].join(' ')

export function chatRouter(deps: Deps) {
  const { user, limit } = guards(deps)
  const route = createRoute({
    method: 'post',
    path: '/',
    tags: ['chat'],
    summary: 'Ask the AI teacher',
    description: `One turn: decide_path, check_wallet (reserve), retrieve_and_rerank, generate (or ask a clarifying question), finalize (settle). ${SSE_DESCRIPTION}`,
    security: bearerSecurity,
    request: { body: { content: { 'application/json': { schema: chatRequestSchema(deps) } }, required: true } },
    responses: {
      200: {
        description: 'The answer: JSON, or an SSE stream of the same data',
        content: { 'application/json': { schema: ChatResponse }, 'text/event-stream': { schema: z.string().openapi({ description: SSE_DESCRIPTION }) } },
      },
      402: jsonContent(ErrorSchema, 'Insufficient balance (`estimated`, `token_balance`): nothing reserved, nothing charged. A balance below the cheapest turn (a clarifying question) is refused before the question is read'),
      404: jsonContent(ErrorSchema, 'Unknown or not ready textbook'),
      503: jsonContent(ErrorSchema, `${UNAVAILABLE_MESSAGE} (the chat model failed or its circuit is open); nothing charged`),
      ...errorResponses.protected,
    },
  })

  const router = createRouter()
  router.use('/', user, limit('chat'))
  return router.openapi(route, async (c) => {
    const input = c.req.valid('json') as ChatInput & { stream?: boolean }
    const principal = c.get('principal')
    if (principal.kind !== 'user') throw new ApiError(ErrorCode.FORBIDDEN, 'This endpoint needs a user token')
    const ctx: TurnContext = { deps, rt: deps.chat, requestId: c.get('requestId'), userId: principal.userId, log: c.get('log'), timings: {} }
    const streaming = input.stream ?? (c.req.header('accept') ?? '').includes('text/event-stream')
    const prepared = await prepareTurn(ctx, input)
    if (streaming) return sseTurn(c, deps, ctx, input, prepared) as never
    return (await jsonTurn(c, ctx, input, prepared)) as never
  })
}

/**
 * Aborted when the client leaves, also when it left before this is called: the request's signal fires
 * once, and a client gone while the turn was being decided (the subject inference embeds the question,
 * a model's round trip) was otherwise never seen to leave, and a JSON client was charged for an answer
 * its closed connection could not be sent.
 */
function whenClientLeaves(c: Context): AbortController {
  const left = new AbortController()
  const signal = c.req.raw.signal
  if (signal?.aborted) left.abort()
  else signal?.addEventListener('abort', () => left.abort(), { once: true })
  return left
}

function sseTurn(c: Context, deps: Deps, ctx: TurnContext, input: ChatInput, prepared: Awaited<ReturnType<typeof prepareTurn>>): Response {
  const left = whenClientLeaves(c)
  return sseResponse({
    clock: deps.clock,
    heartbeatMs: deps.config.CHAT_HEARTBEAT_SECONDS * 1000,
    onCancel: () => left.abort(),
    // the turn outlives a client that leaves: it still settles the reservation (awaited on shutdown)
    run: (send) => {
      const sink: TurnSink = {
        meta: (d) => send('meta', d),
        sources: (d) => send('sources', d),
        delta: (text) => send('delta', { text }),
        done: (d) => send('done', d),
        error: (d) => send('error', d),
      }
      const turn = completeTurn(ctx, input, prepared, sink, left.signal).then(() => {})
      deps.background.run(() => turn)
      return turn
    },
  })
}

async function jsonTurn(c: Context, ctx: TurnContext, input: ChatInput, prepared: Awaited<ReturnType<typeof prepareTurn>>): Promise<Response> {
  const body: Record<string, unknown> = { answer: '' }
  let answer = ''
  let failure: { error: string; message: string } | null = null
  const sink: TurnSink = {
    meta: (d) => Object.assign(body, d),
    sources: (d) => Object.assign(body, d),
    delta: (text) => void (answer += text),
    done: (d) => Object.assign(body, d),
    error: (d) => void (failure = d),
  }
  const left = whenClientLeaves(c)
  await completeTurn(ctx, input, prepared, sink, left.signal, 'body')
  if (failure) {
    const f = failure as { error: string; message: string }
    throw new ApiError(f.error === ErrorCode.SERVICE_UNAVAILABLE || f.error === ErrorCode.BAD_REQUEST ? f.error : ErrorCode.INTERNAL_ERROR, f.message)
  }
  body.answer = answer
  return c.json(body, 200)
}
