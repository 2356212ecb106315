// A question to the AI teacher, as the chat's service: a retried request of an Idempotency-Key is its
// first turn again; otherwise the conversation's history is read, the turn decided and its tokens
// reserved (agent.ts), then recorded and generated in the background, since a client that leaves does
// not stop its answer. The route only chooses how the turn is sent: a stream, or one JSON body.
import type { ServiceContext } from '../deps.ts'
import { isPgError } from '../db/tx.ts'
import { DomainError } from '../domain/errors.ts'
import { canonicalJson, sha256Hex } from '../lib/hash.ts'
import { chatRuntime } from './runtime.ts'
import { completeTurn, decisionMeta, prepareTurn, turnMeta } from './agent.ts'
import { finalizeTurn } from './settle.ts'
import type { ChatInput, Decision, TurnContext } from './turn.ts'
import type { TurnState } from './turn-state.ts'
import { readTurn } from './turn-store.ts'
import { TurnRecorder } from './turn-recorder.ts'
import { databaseTurnWrites, recordedStart } from './turn-writes.ts'
import { type ConversationContext, loadConversation } from './conversation.ts'

/** The most a retried request waits for the first request of its Idempotency-Key to begin its turn. */
const KEY_WAIT_MS = 30_000

export interface AskInput {
  user_id: string
  question: ChatInput & { conversation_id?: string | undefined }
  idempotency_key?: string | undefined
}

/** The turn the question is: a new one (`replayed` false) or the first one of its Idempotency-Key. */
export interface Asked {
  turnId: string
  replayed: boolean
  /** the turn as it stands when its answer begins (or, replayed, when it is read) */
  state: TurnState
}

export async function askQuestion({ ctx, input }: { ctx: ServiceContext; input: AskInput }): Promise<Asked> {
  const { deps, requestId } = ctx
  const { user_id: userId, question, idempotency_key: key } = input
  const log = ctx.log ?? deps.logs.forRequest('chat', requestId)
  if (question.conversation_id && question.history) {
    throw new DomainError('bad_request', 'A conversation keeps its own history: send conversation_id or history, not both', {
      fields: [{ field: 'history', message: 'is not allowed with conversation_id' }],
    })
  }
  const turnId: string = crypto.randomUUID()
  const rt = chatRuntime(deps)
  const live = rt.live
  if (key) {
    const hash = sha256Hex(canonicalJson(question))
    const waitUntil = Date.now() + KEY_WAIT_MS
    for (;;) {
      const [claim] = await deps.sql<{ turn_id: string; request_hash: string; fresh: boolean }[]>`
        select * from public.claim_chat_idempotency(${userId}, ${key}, ${hash}, ${turnId})`
      if (claim!.fresh) break
      if (claim!.request_hash !== hash) {
        throw new DomainError(
          'idempotency_key_reused',
          'This Idempotency-Key was sent with another request in the last 24 hours: use a new key for a new question',
        )
      }
      const state = await readTurn({ ctx, input: { userId, turnId: claim!.turn_id } })
      if (state) {
        log.info({ turn_id: state.turnId, idempotency_key: key }, 'a retried request: its turn is replayed')
        return { turnId: state.turnId, replayed: true, state }
      }
      // a turn that began and whose messages are gone: its conversation was deleted
      const [begun] = await deps.sql<{ exists: boolean }[]>`
        select exists (select 1 from public.chat_turns t where t.id = ${claim!.turn_id} and t.user_id = ${userId}
                        and not exists (select 1 from public.chat_messages m where m.turn_id = t.id))`
      if (begun?.exists) throw new DomainError('not_found', `The turn of this Idempotency-Key (${claim!.turn_id}) is gone with its conversation`)
      if (Date.now() > waitUntil) {
        throw new DomainError('conflict', 'The first request with this Idempotency-Key is still being decided: retry in a moment', {}, { retryAfter: 1 })
      }
      // the first request is still deciding its turn (or was refused and frees the key): wait for it
      await live.wait(claim!.turn_id, deps.config.CHAT_FOLLOW_POLL_MS).moved
    }
  }
  const turn: TurnContext = { deps, rt, requestId, userId, turnId, clientKey: ctx.clientKey, log, timings: {} }
  const releaseKey = async () => {
    if (!key) return
    await deps.sql`select public.release_chat_idempotency(${userId}, ${turnId})`
    live.moved(turnId)
  }
  let conversation: ConversationContext | null = null
  let turnInput: ChatInput = question
  let prepared: Awaited<ReturnType<typeof prepareTurn>>
  const writes = rt.writes ?? databaseTurnWrites(deps)
  const lessonOf = (decision: Decision) => ({ grade: decision.grade ?? decision.inferredGrade ?? null, subject: decision.subject })
  // written to the database, the turn's record begins in the statement that holds its tokens
  const record = writes.durable
    ? (decision: Decision) =>
      recordedStart(deps, {
        turnId,
        conversationId: conversation?.id ?? null,
        question: question.message,
        meta: decisionMeta(turn, decision),
        lesson: lessonOf(decision),
      })
    : undefined
  try {
    if (question.conversation_id) {
      conversation = await loadConversation(deps, userId, question.conversation_id)
      turnInput = { ...question, history: conversation.history, conversation }
    }
    prepared = await prepareTurn(turn, turnInput, record)
  } catch (err) {
    await releaseKey()
    throw err
  }
  let recorder: TurnRecorder
  try {
    recorder = await TurnRecorder.begin(deps, live, writes, log, {
      turnId,
      userId,
      conversationId: conversation?.id ?? null,
      reservationId: prepared.hold.reservation.id,
      requestId,
      question: question.message,
      meta: turnMeta(turn, prepared),
      lesson: lessonOf(prepared.decision),
      begun: prepared.hold.conversationId,
    })
  } catch (err) {
    // the turn could not begin (its conversation deleted meanwhile, the database out): its hold is released
    await finalizeTurn(turn, prepared.decision, prepared.hold, {
      actual: 0,
      kind: 'released',
      characters: 0,
      model: null,
      outcome: 'failed',
      extra: { error: (err as Error).message },
    })
    await releaseKey().catch(() => {})
    if (isPgError(err, 'PT404')) throw new DomainError('not_found', `Conversation ${question.conversation_id} was not found`)
    throw err
  }
  // the turn outlives its request: a client that leaves reads it later (awaited on shutdown; waitUntil on Supabase)
  deps.background.run(async () => {
    await completeTurn(turn, turnInput, prepared, recorder, recorder.cancel.signal)
    await recorder.finished
  })
  return { turnId, replayed: false, state: recorder.state }
}
