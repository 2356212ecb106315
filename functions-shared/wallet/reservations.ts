// The wallet's reservations: a hold on a student's tokens (reserve), its settlement (finalize), the expiry job
// that refunds the holds past their TTL, and the caller's own reservations.
import type { ServiceContext } from '../deps.ts'
import type { Principal } from '../http/auth.ts'
import { asUser } from '../db/tx.ts'
import type { TotalRow } from '../db/client.ts'
import { countReservation } from './metrics.ts'
import { iso } from '../lib/time.ts'
import { DomainError, refusalCode } from '../domain/errors.ts'
import type { ExpiryRow, ReservationRow, SettlementRow } from './rows.ts'
import { rpc } from './service.ts'

function reservationJson(r: ReservationRow) {
  return {
    id: r.id,
    user_id: r.user_id,
    estimated: Number(r.estimated),
    actual: r.actual === null ? null : Number(r.actual),
    charged: r.charged === null ? null : Number(r.charged),
    status: r.status,
    request_id: r.request_id,
    created_at: iso(r.created_at)!,
    expires_at: iso(r.expires_at)!,
    finalized_at: iso(r.finalized_at),
  }
}

/** The caller's own reservations, through RLS (stale ones are expired first). */
export async function listOwnReservations(
  { ctx, principal, input }: { ctx: ServiceContext; principal: Principal; input: { status?: string | undefined; limit: number; offset: number } },
) {
  if (principal.kind !== 'user') throw new DomainError('forbidden', 'This endpoint needs a user token')
  await rpc(ctx, (sql) => sql`select * from public.expire_user_reservations(${principal.userId})`)
  return asUser(ctx.deps.sql, { ...principal.claims, sub: principal.userId }, async (tx) => {
    const status = input.status ?? null
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.reservations where (${status}::text is null or status = ${status})`
    const rows = await tx<ReservationRow[]>`select * from public.reservations where (${status}::text is null or status = ${status})
                          order by created_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(reservationJson), total, limit: input.limit, offset: input.offset }
  })
}

export async function reserve({ ctx, input }: { ctx: ServiceContext; input: { user_id: string; estimate: number; request_id?: string | undefined } }) {
  const { config } = ctx.deps
  try {
    const row = await rpc(ctx, async (tx) => {
      const [r] = await tx<ReservationRow[]>`select * from public.reserve_tokens(${input.user_id}, ${input.estimate}, ${input.request_id ?? ctx.requestId},
                                                              ${config.RESERVATION_TTL_SECONDS}, ${config.WELCOME_BONUS_TOKENS})`
      return r!
    })
    countReservation(ctx.deps.metrics.wallet, 'reserved', input.estimate)
    return reservationJson(row)
  } catch (err) {
    if (refusalCode(err) === 'insufficient_balance') countReservation(ctx.deps.metrics.wallet, 'insufficient')
    throw err
  }
}

/** What a chat turn adds to its usage-log row. */
export interface TurnUsage {
  characters: number
  model: string | null
  details: Record<string, unknown>
  /**
   * the chat turn's end, written in the settlement's statement (public.finalize_recorded_chat_turn): its
   * last text and sources, its status, its terminal event without the usage the settlement gives, the
   * document its answer cited first
   */
  end?: {
    turnId: string
    status: string
    text: string
    sourcesEvent: Record<string, unknown> | null
    terminal: Record<string, unknown>
    document: string | null
  }
}

export async function finalize(
  { ctx, input, usage }: {
    ctx: ServiceContext
    input: { reservation_id: string; actual: number; kind?: 'chat' | 'clarify' | 'manual' | 'released'; request_id?: string | undefined }
    usage?: TurnUsage
  },
) {
  const m = ctx.deps.metrics.wallet
  const cap = ctx.deps.config.ACTUAL_COST_CAP_MULTIPLIER
  try {
    const row = await rpc(ctx, async (tx) => {
      const end = usage?.end
      const json = (v: Record<string, unknown> | null) => (v === null ? null : tx.json(v as never))
      const [r] = usage && end
        ? await tx<(SettlementRow & { terminal: Record<string, unknown> })[]>`
          select * from public.finalize_recorded_chat_turn(${input.reservation_id}, ${input.actual}, ${input.request_id ?? null}, ${input.kind ?? 'chat'},
                                                           ${cap}, ${usage.characters}, ${usage.model}, ${json(usage.details)}, ${end.turnId},
                                                           ${end.status}, ${end.text}, ${json(end.sourcesEvent)}, ${json(end.terminal)}, ${end.document})`
        : usage
        ? await tx<SettlementRow[]>`select * from public.finalize_chat_turn(${input.reservation_id}, ${input.actual}, ${input.request_id ?? null}, ${
          input.kind ?? 'chat'
        },
                                                           ${cap}, ${usage.characters}, ${usage.model}, ${json(usage.details)})`
        : await tx<SettlementRow[]>`select * from public.finalize_reservation(${input.reservation_id}, ${input.actual}, ${input.request_id ?? null},
                                                             ${input.kind ?? 'manual'}, ${cap})`
      return r! as SettlementRow & { terminal?: Record<string, unknown> }
    })
    m.reservations.inc({ outcome: 'finalized' })
    m.tokens.inc({ movement: 'charged' }, Number(row.charged))
    m.tokens.inc({ movement: 'refunded' }, Number(row.refunded))
    return {
      reservation_id: row.reservation_id,
      user_id: row.user_id,
      status: 'finalized' as const,
      estimated: Number(row.estimated),
      actual: Number(row.actual),
      charged: Number(row.charged),
      refunded: Number(row.refunded),
      uncovered: Number(row.uncovered),
      token_balance: Number(row.token_balance),
      ledger_entry_id: row.ledger_entry_id === null ? null : Number(row.ledger_entry_id),
      request_id: row.request_id,
      /** the chat turn's terminal event as its end was written with the settlement (usage.end) */
      terminal: row.terminal,
    }
  } catch (err) {
    if (refusalCode(err) === 'conflict') m.reservations.inc({ outcome: 'conflict' })
    throw err
  }
}

/** Refunds every reservation past its TTL (the expiry job); `now` lets tests move time. */
export async function expireReservations({ ctx, now }: { ctx: ServiceContext; now?: Date }): Promise<{ expired: number; tokens: number }> {
  const row = await rpc(ctx, async (tx) => {
    const [r] = now
      ? await tx<ExpiryRow[]>`select * from public.expire_reservations(${now})`
      : await tx<ExpiryRow[]>`select * from public.expire_reservations()`
    return r!
  })
  const result = { expired: Number(row.expired), tokens: Number(row.tokens) }
  if (result.expired > 0) {
    const m = ctx.deps.metrics.wallet
    m.reservations.inc({ outcome: 'expired' }, result.expired)
    m.tokens.inc({ movement: 'expired' }, result.tokens)
  }
  return result
}
