// The money steps of a chat turn: check_wallet (the daily limit and the hold, before any answer starts)
// and finalize (the reservation settled, the usage written). See agent.ts for the order.
import type { Deps } from '../deps.ts'
import { type Tier, tierLimits } from '../config.ts'
import { finalize } from '../wallet/reservations.ts'
import type { Terminal } from './turn-state.ts'
import { countReservation } from '../wallet/metrics.ts'
import { iso } from '../lib/time.ts'
import { isPgError } from '../db/tx.ts'
import { storable, storableText } from '../lib/text.ts'
import type { HintLevel } from './prompt.ts'
import type { CatalogueSubject } from './infer.ts'
import type { RecordedStart } from './turn-writes.ts'
import { type Decision, type Hold, type Outcome, type SettledEnd, timed, type TurnContext, UNAVAILABLE_MESSAGE, type Usage } from './turn.ts'
import { DomainError, refusalCode } from '../domain/errors.ts'

function untilUtcMidnight(now: number): number {
  const d = new Date(now)
  return Math.max(1, Math.ceil((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - now) / 1000))
}

/** The estimate: the flat clarifying cost, or base + 1 per 200 characters of the longest answer the tier allows. */
export function estimateFor(deps: Deps, path: Decision['path'], tier: Tier): { estimated: number; maxChars: number } {
  const { config } = deps
  const maxChars = tierLimits(config, tier).maxTokens * config.CHAT_CHARS_PER_MODEL_TOKEN
  if (path === 'clarify') return { estimated: config.BILLING_CLARIFY_COST, maxChars }
  return { estimated: config.BILLING_BASE_COST + Math.ceil(maxChars / config.BILLING_CHARS_PER_TOKEN), maxChars }
}

/** The actual cost of an answer of `characters` characters (before the cap of finalize). */
export function actualFor(deps: Deps, characters: number): number {
  return deps.config.BILLING_BASE_COST + Math.ceil(characters / deps.config.BILLING_CHARS_PER_TOKEN)
}

/** public.begin_chat_turn's one row: the turn's reservation, or why there is none. */
type BeginTurnRow =
  & {
    tier: Tier
    hint_level: HintLevel
    /** the day's turns, counted only for a tier with a daily limit */
    turns: number | null
    token_balance: string
    estimated: number
  }
  & (
    | { refused: null; reservation_id: string; expires_at: Date }
    | { refused: 'daily_limit'; reservation_id: null; expires_at: null }
    | { refused: 'insufficient_balance'; reservation_id: null; expires_at: null }
  )

/**
 * Step 2. Refuses what cannot be served — the chat model's circuit open (503), the tier's daily limit
 * (429) — then reserves the estimate (402 when the balance is short: nothing reserved).
 */
export async function checkWallet(ctx: TurnContext, decision: Decision, record?: RecordedStart): Promise<Hold> {
  return timed(ctx, 'check_wallet', async () => {
    const { deps } = ctx
    if (decision.path === 'answer' && ctx.rt.breaker.state === 'open') {
      throw new DomainError('service_unavailable', UNAVAILABLE_MESSAGE, { reason: 'circuit_open' }, { retryAfter: deps.config.CIRCUIT_RESET_SECONDS })
    }
    const tiers = ['free', 'standard', 'premium'] as const
    const estimates = tiers.map((t) => estimateFor(deps, decision.path, t).estimated)
    const daily = tiers.map((t) => tierLimits(deps.config, t).dailyLimit ?? 0)
    const reservedAt = deps.clock.now()
    const args = deps.sql`${ctx.userId}, ${ctx.requestId}, ${estimates}::int[], ${daily}::int[], ${deps.config.RESERVATION_TTL_SECONDS},
                          ${deps.config.WELCOME_BONUS_TOKENS}, ${ctx.clientKey ?? null}, ${deps.config.WELCOME_BONUS_DAILY_PER_ADDRESS}`
    // the turn's record begins in the same statement when it is written to the database
    const [row] = await (record
      ? deps.sql<[BeginTurnRow & { conversation_id: string | null }]>`
      select * from public.begin_recorded_chat_turn(${args}, ${record.turnId}, ${record.conversationId}, ${record.question}, ${record.title},
                                                    ${deps.sql.json(record.meta as never)}, ${record.leaseSeconds}, ${record.lesson.grade},
                                                    ${record.lesson.subject})`
      : deps.sql<[BeginTurnRow & { conversation_id?: undefined }]>`select * from public.begin_chat_turn(${args})`).catch((err: unknown) => {
        if (isPgError(err, 'PT404')) {
          // the conversation deleted since it was read: nothing is held (one statement)
          if (record && /^conversation /.test((err as Error).message)) throw new DomainError('not_found', `Conversation ${record.conversationId} was not found`)
          // a token that outlived its account (deleted since it was issued): no wallet to reserve from
          throw new DomainError('unauthorized', 'The account of this token no longer exists; sign in again')
        }
        throw err
      })
    const tier = row.tier
    const turns = row.turns === null ? null : Number(row.turns)
    const { estimated, maxChars } = estimateFor(deps, decision.path, tier)
    if (row.refused === 'daily_limit') throw dailyLimitReached(deps, tier)
    if (row.refused === 'insufficient_balance') {
      countReservation(deps.metrics.wallet, 'insufficient')
      throw new DomainError('insufficient_balance', `This answer needs ${estimated} tokens reserved; the balance is ${Number(row.token_balance)}`, {
        estimated,
        token_balance: Number(row.token_balance),
      })
    }
    countReservation(deps.metrics.wallet, 'reserved', estimated)
    const reservation = { id: row.reservation_id, estimated: Number(row.estimated), expires_at: iso(row.expires_at)! }
    const hold: Hold = { tier, hintLevel: row.hint_level, estimated, maxChars, reservation, reservedAt }
    if (row.conversation_id) hold.conversationId = row.conversation_id
    ctx.log.info({ step: 'check_wallet', tier, estimated, reservation_id: reservation.id, turns_today: turns }, 'check_wallet')
    return hold
  })
}

/** The 429 of a tier whose chat turns for the UTC day are used, with the seconds until midnight UTC. */
function dailyLimitReached(deps: Deps, tier: Tier): DomainError {
  const limit = tierLimits(deps.config, tier).dailyLimit
  const retryAfter = untilUtcMidnight(deps.clock.now())
  return new DomainError('daily_limit_reached', `The ${tier} tier allows ${limit} chat turns per day`, { limit, window: '1d', retry_after: retryAfter }, {
    retryAfter,
  })
}

/**
 * Before the question is read, what no turn of this wallet can get past is refused here, before the
 * subject inference searches the catalogue and embeds (with a model: translates) the question:
 * - a balance that cannot pay the cheapest turn (a clarifying question, BILLING_CLARIFY_COST): 402;
 * - a tier whose settled turns of the UTC day (public.turns_today) reach its daily limit: 429.
 * Without it an exhausted account, or one at its daily limit, still made the provider and the database
 * work on each of its turns (10 a minute), for a 402 or a 429 in the end. Turns still in flight count
 * in check_wallet (public.begin_chat_turn), which stays the rule; this only refuses earlier what it would
 * refuse. A wallet not made yet (the first turn makes it with the welcome bonus) is left to check_wallet.
 * The same statement reads what the inference needs of the catalogue: the grade and subject of its ready
 * documents, read with each question (a document published a moment ago is named).
 */
export async function refuseBeforeReading(ctx: TurnContext): Promise<{ tier: Tier; catalogue: CatalogueSubject[] }> {
  const { deps } = ctx
  // the day's turns are counted only for a tier that has a daily limit (premium has none)
  const tiers = ['free', 'standard', 'premium'] as const
  const limited = tiers.filter((t) => (tierLimits(deps.config, t).dailyLimit ?? 0) > 0)
  const [wallet] = await deps.sql<{ token_balance: string | null; subscription_tier: Tier | null; turns: number | null; catalogue: CatalogueSubject[] }[]>`
    select w.token_balance, w.subscription_tier,
           case when w.subscription_tier = any(${limited}::text[]) then public.turns_today(w.user_id) end as turns,
           (select coalesce(json_agg(json_build_object('grade', p.grade, 'subject', p.subject)), '[]')
              from (select distinct d.grade, d.subject from public.documents d where d.status = 'ready' and d.subject is not null) p) as catalogue
      from (select 1) one left join public.wallets w on w.user_id = ${ctx.userId}`
  const catalogue = wallet!.catalogue
  // a wallet not made yet is made on the free tier
  if (wallet!.subscription_tier === null || wallet!.token_balance === null) return { tier: 'free', catalogue }
  const tier = wallet!.subscription_tier
  const daily = tierLimits(deps.config, tier).dailyLimit ?? 0
  if (daily > 0 && wallet!.turns !== null && Number(wallet!.turns) >= daily) {
    ctx.log.info(
      { step: 'check_wallet', tier, turns_today: Number(wallet!.turns), daily_limit: daily },
      'the daily limit is reached: refused before the question is read',
    )
    throw dailyLimitReached(deps, tier)
  }
  const balance = Number(wallet!.token_balance)
  const { estimated } = estimateFor(deps, 'clarify', tier)
  if (balance >= estimated) return { tier, catalogue }
  countReservation(deps.metrics.wallet, 'insufficient')
  ctx.log.info({ step: 'check_wallet', token_balance: balance, estimated }, 'the balance pays no turn: refused before the question is read')
  throw new DomainError('insufficient_balance', `A turn needs at least ${estimated} tokens reserved; the balance is ${balance}`, {
    estimated,
    token_balance: balance,
  })
}

export class SettlementError extends Error {
  override name = 'SettlementError'
}

/**
 * Step 5. Settles the reservation (actual 0 releases it) and writes the usage row. What the turn writes
 * is made storable first, so no text (the question, the model's output, an error message) can make the
 * settlement fail; if the write fails anyway, the money is settled again with only the charge's facts.
 * Null when the reservation cannot be settled (it outlived its TTL and the expiry refunded it, or the
 * database is out).
 */
export async function finalizeTurn(
  ctx: TurnContext,
  decision: Decision,
  hold: Hold,
  settle: {
    actual: number
    kind: 'chat' | 'clarify' | 'released'
    characters: number
    model: string | null
    outcome: Outcome
    extra?: Record<string, unknown>
  },
  end?: SettledEnd,
): Promise<Usage | null> {
  return timed(ctx, 'finalize', async () => {
    const attempt = (details: Record<string, unknown>, model: string | null, withEnd?: SettledEnd) =>
      finalize({
        ctx: { deps: ctx.deps, requestId: ctx.requestId },
        input: { reservation_id: hold.reservation.id, actual: settle.actual, kind: settle.kind, request_id: ctx.requestId },
        usage: {
          characters: settle.characters,
          model: model === null ? null : storableText(model),
          details: storable(details),
          ...(withEnd ? { end: withEnd } : {}),
        },
      })
    // a turn that charges nothing writes what it was and how it ended, not the inference's weights and the
    // timings (3 KB a row): a student's free turns would grow the usage log without bound
    const uncharged = settle.actual === 0
    const details = {
      path: decision.path,
      reason: decision.reason,
      outcome: settle.outcome,
      language: decision.language,
      subject: decision.subject,
      grade: decision.grade,
      ...(decision.inference && !uncharged ? { inference: decision.inference } : {}),
      ...(decision.inference ? { inferred_grade: decision.inferredGrade ?? null } : {}),
      tier: hold.tier,
      hint_level: hold.hintLevel,
      ...(ctx.turnId ? { turn_id: ctx.turnId } : {}),
      ...(uncharged ? {} : { timings: ctx.timings }),
      ...settle.extra,
    }
    let r: Awaited<ReturnType<typeof finalize>>
    try {
      r = await attempt(details, settle.model, end)
      if (end && r.terminal) end.written = r.terminal as unknown as Terminal
    } catch (err) {
      const conflict = refusalCode(err) === 'conflict'
      ctx.log.error({ step: 'finalize', err: { message: (err as Error).message }, reservation_id: hold.reservation.id }, 'finalize failed')
      // e.g. the turn outlived its reservation and the expiry job refunded it: nothing is charged
      if (conflict) return null
      try {
        r = await attempt({ path: decision.path, outcome: settle.outcome, tier: hold.tier, settle_retry: (err as Error).message }, null)
      } catch (again) {
        ctx.log.error({ step: 'finalize', err: { message: (again as Error).message }, reservation_id: hold.reservation.id }, 'finalize failed again')
        return null
      }
    }
    ctx.rt.metrics.tokensCharged.inc(r.charged)
    ctx.log.info({
      step: 'finalize',
      actual: r.actual,
      charged: r.charged,
      refunded: r.refunded,
      uncovered: r.uncovered,
      kind: settle.kind,
      outcome: settle.outcome,
    }, 'finalize')
    return {
      estimated: r.estimated,
      actual: r.actual,
      charged: r.charged,
      refunded: r.refunded,
      uncovered: r.uncovered,
      characters: settle.characters,
      token_balance: r.token_balance,
    }
  })
}

/** decide_path and check_wallet: what they refuse is an HTTP error; nothing is reserved then. */
