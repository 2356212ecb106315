// A stored chat turn read by any process: from the memory of the process that generates it, else from
// the database; its events replayed after a Last-Event-ID and followed to its end (followTurn); its end
// awaited (settledTurn); its cancel asked for (cancelTurn).
import type { ServiceContext } from '../deps.ts'
import { DomainError } from '../domain/errors.ts'
import { eventsAfter, type Terminal, type TurnEvent, type TurnState, type TurnStatus } from './turn-state.ts'
import { chatRuntime } from './runtime.ts'

/** A turn of a user. */
export interface TurnOf {
  userId: string
  turnId: string
}
type Ctx = Pick<ServiceContext, 'deps'>

interface TurnRow {
  id: string
  conversation_id: string | null
  status: TurnStatus
  meta: Record<string, unknown>
  sources_event: Record<string, unknown> | null
  terminal: Terminal | null
  usage: Record<string, unknown> | null
  content: string | null
  question: string | null
  stale: boolean
}

/**
 * The turn as this user may read it, from this process's memory when it generates it, else from the
 * database (a turn past its lease is interrupted first). Null when it is not the user's, or its
 * conversation was deleted.
 */
export async function readTurn({ ctx, input }: { ctx: Ctx; input: TurnOf }): Promise<TurnState | null> {
  const { deps } = ctx
  const { userId, turnId } = input
  const here = chatRuntime(deps).live.get(turnId)
  if (here) return here.userId === userId ? here.state : null
  // one statement, not a transaction with a role: a follower reads it every CHAT_FOLLOW_POLL_MS, and the
  // user is named in the query
  const read = () =>
    deps.sql<TurnRow[]>`
      select t.id, t.conversation_id, t.status, t.meta, t.sources_event, t.terminal, t.usage, a.content, q.content as question,
             (t.status = 'streaming' and t.lease_until < now()) as stale
        from public.chat_turns t
        left join public.chat_messages a on a.turn_id = t.id and a.role = 'teacher'
        left join public.chat_messages q on q.turn_id = t.id and q.role = 'student'
       where t.id = ${turnId} and t.user_id = ${userId}`
  let [row] = await read()
  if (row?.stale) {
    await deps.sql`select public.interrupt_stale_turns(${turnId})`
    ;[row] = await read()
  }
  if (!row || row.content === null) return null
  return {
    turnId: row.id,
    conversationId: row.conversation_id,
    status: row.status,
    meta: row.meta,
    sourcesEvent: row.sources_event,
    content: row.content,
    terminal: row.terminal,
    usage: row.usage,
    question: row.question,
  }
}

/**
 * Sends the turn's events after `lastId`, then follows it to its terminal event: from memory when this
 * process generates it, else from the database every CHAT_FOLLOW_POLL_MS. Stops when `signal` aborts.
 */
export async function followTurn(
  { ctx, input, send, signal }: { ctx: Ctx; input: TurnOf & { lastId: number }; send: (e: TurnEvent) => void; signal: AbortSignal },
): Promise<void> {
  const { deps } = ctx
  const { turnId } = input
  const live = chatRuntime(deps).live
  let last = input.lastId
  while (!signal.aborted) {
    // listening before reading: a move while it reads wakes the next read at once
    const { moved, stop } = live.wait(turnId, deps.config.CHAT_FOLLOW_POLL_MS, signal)
    const state = await readTurn({ ctx, input }).catch((err: unknown) => {
      stop()
      throw err
    })
    if (!state) {
      stop()
      send({ id: last + 1, event: 'error', data: { error: 'not_found', message: `Turn ${turnId} was not found (its conversation may have been deleted)` } })
      return
    }
    for (const e of eventsAfter(state, last)) {
      send(e)
      last = e.id
    }
    if (state.terminal) return stop()
    await moved
  }
}

/** Waits for the turn's end and returns it (null when it is not found). */
export async function settledTurn({ ctx, input, signal }: { ctx: Ctx; input: TurnOf; signal?: AbortSignal }): Promise<TurnState | null> {
  const live = chatRuntime(ctx.deps).live
  for (;;) {
    const { moved, stop } = live.wait(input.turnId, ctx.deps.config.CHAT_FOLLOW_POLL_MS, signal)
    const state = await readTurn({ ctx, input }).catch((err: unknown) => {
      stop()
      throw err
    })
    if (!state || state.terminal || signal?.aborted) {
      stop()
      return state
    }
    await moved
  }
}

/**
 * Asks the turn to stop (from any process: the database says so, the process generating it hears it on
 * its next write), then waits up to 10 s for its end. The turn as it is then (`terminal` null: still
 * ending); refused when it is not the user's (not_found) or had already ended (conflict).
 */
export async function cancelTurn({ ctx, input }: { ctx: Ctx; input: TurnOf }): Promise<TurnState> {
  const { deps } = ctx
  const [row] = await deps.sql<{ status: string | null }[]>`select public.request_turn_cancel(${input.turnId}, ${input.userId}) as status`
  const status = row?.status ?? null
  if (status === null) throw new DomainError('not_found', `Turn ${input.turnId} was not found`)
  if (status !== 'streaming' && status !== 'cancelled') throw new DomainError('conflict', `The turn has already ended: ${status}`, { status })
  chatRuntime(deps).live.get(input.turnId)?.cancel.abort()
  const state = await settledTurn({ ctx, input, signal: AbortSignal.timeout(10_000) })
  if (!state) throw new DomainError('not_found', `Turn ${input.turnId} was not found`)
  return state
}
