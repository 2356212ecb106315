// The chat's request and response schemas: they validate POST /chat and the turn routes, and they are the
// API reference's (GET /docs).
import { z } from '@hono/zod-openapi'
import type { Deps } from '../deps.ts'
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
    excerpt: z.string().openapi({
      description:
        'at most 280 characters of the chunk as written: the sentences that hold most of the question\'s words, with "… " where text was left out before and " …" after',
    }),
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

export const ChatResponse = z
  .object({
    request_id: z.string().openapi({ description: 'the request that began the turn' }),
    turn_id: z.uuid().openapi({ description: 'the turn: GET /chat/turns/{turn_id} reads it again, resumes its stream, POST .../cancel stops it' }),
    conversation_id: z.uuid().nullable().openapi({ description: 'the conversation the turn belongs to (null once deleted)' }),
    status: z.enum(TURN_STATUSES).openapi({
      description:
        'streaming, answered, clarified, cancelled, failed (the service or the model failed: nothing charged), interrupted (the process generating it died: what was written is kept, nothing charged)',
    }),
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
        query: z.string().openapi({
          description: 'the text the rerank read: the French translation of an Arabic or Hassaniya question when there is one, else the question',
        }),
        translated: z.boolean(),
        translation_failed: z.boolean(),
        cross_lingual: z
          .object({
            status: z.enum(['searched', 'unchanged', 'failed', 'not_possible', 'not_needed']),
            language: z.enum(['fr', 'ar']),
            query: z.string().nullable(),
          })
          .openapi({
            description:
              "the search of the question translated into the other curriculum language (ar for a French question, fr otherwise), fused with the search of the question: searched, unchanged (the translation was the same text), failed (the provider erred), not_possible (the provider cannot translate: offline), not_needed (document_language is the question's own language)",
          }),
        candidates: z.number().int(),
        rerank: z.string(),
      })
      .nullable(),
    outcome: z.string(),
    usage: UsageSchema.nullable(),
    model: z.string().nullable(),
    extractive: z.boolean().openapi({ description: 'true when the answer quotes the snippets (offline provider) instead of being written by a model' }),
    timings: z.record(z.string(), z.number()),
    error: z.object({ error: z.string(), message: z.string(), request_id: z.string() }).optional().openapi({
      description: 'a failed or interrupted turn: why',
    }),
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
      language: z.enum(['fr', 'ar', 'hassaniya']).optional().openapi({
        description: 'language of the question and the answer; detected from the script when absent',
      }),
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
        .openapi({
          description:
            'subject slug (mathematiques, physique, sciences-naturelles, education-islamique, arabe, histoire; accents, case, spaces and underscores are read as the slug: "Éducation islamique" is education-islamique; a portal\'s other slugs and the names in Arabic as the catalogue\'s: svt is sciences-naturelles, tarbiya-islamiya and التربية الإسلامية education-islamique); inferred from the question when absent',
        }),
      textbook_id: z.uuid().optional().openapi({ description: 'answer from this textbook only (a ready document)' }),
      document_language: z.enum(['fr', 'ar']).optional().openapi({ description: 'search only documents in this language' }),
      conversation_id: z.uuid().optional().openapi({
        description:
          "the conversation this question follows (its recent messages are the model's history, and a question that names no subject is about its lesson); without it, a new conversation is made",
      }),
      history: z
        .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().min(1).max(config.CHAT_HISTORY_MAX_CHARS) }).strict())
        .max(config.CHAT_HISTORY_MAX_MESSAGES)
        .optional()
        .openapi({
          description:
            `earlier messages, oldest first (at most ${config.CHAT_HISTORY_MAX_MESSAGES}, each at most ${config.CHAT_HISTORY_MAX_CHARS} characters); refused with conversation_id, whose stored messages are the history`,
        }),
      stream: z.boolean().optional().openapi({ description: 'true: SSE; false: JSON; absent: SSE when Accept includes text/event-stream' }),
    })
    .strict()
    .openapi('ChatRequest')
}

export const SSE_DESCRIPTION = [
  'With `stream: true` (or no `stream` and `Accept: text/event-stream`): an SSE stream of events, each with an `id:`,',
  '`meta` (request id, turn_id, conversation_id, path, language, reservation), `sources` (the cited snippets, sent with the first text), `delta` ({text}),',
  'then `done` (outcome, usage with tokens charged and the balance after) or `error` ({error, message, request_id}).',
  'A comment line `: heartbeat` is sent after CHAT_HEARTBEAT_SECONDS without an event. The response headers X-Turn-Id and X-Conversation-Id name the turn before its first event.',
  'A client that leaves does not stop the answer: it is stored and billed, and GET /chat/turns/{turn_id} with `Last-Event-ID` resumes it.',
].join(' ')

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .optional()
  .openapi({
    description:
      "a key of the client's choosing (a UUID): the same key and body within 24 hours is the same turn, replayed or followed, with no second reservation; the same key with another body is 422 idempotency_key_reused. Per user.",
  })

export const TurnParams = z.object({ turn_id: z.uuid().openapi({ param: { name: 'turn_id', in: 'path' } }) })
