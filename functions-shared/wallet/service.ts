// The token wallet: every money movement is one RPC of the wallet migration, run as the service role;
// reads of the caller's own rows go through asUser so RLS guards them. Reservations are in reservations.ts.
import type { ServiceContext } from '../deps.ts'
import { sha256Hex } from '../lib/hash.ts'
import type { Principal } from '../http/auth.ts'

import { asService, asUser, fromRpcError } from '../db/tx.ts'
import type { Sql, TotalRow } from '../db/client.ts'
import { type Tier, tierLimits } from '../config.ts'
import { iso } from '../lib/time.ts'
import { LEDGER_REASONS } from '../domain/enums.ts'
import { DomainError } from '../domain/errors.ts'
import type { BalanceRow, LedgerRow, TopUpRow, TransactionRow } from './rows.ts'

/**
 * Runs money RPCs. Each RPC is one security-definer function that is its own transaction, so it goes
 * out as one statement (one round trip): it runs as its owner whoever calls it, and EXECUTE is granted
 * only to service_role (and the owner the service connects as).
 */
export async function rpc<T>(ctx: ServiceContext, fn: (sql: Sql) => Promise<T>): Promise<T> {
  try {
    return await fn(ctx.deps.sql)
  } catch (err) {
    throw fromRpcError(err)
  }
}

export async function getBalance({ ctx, userId }: { ctx: ServiceContext; userId: string }) {
  const { config } = ctx.deps
  const [row, turns] = await rpc(ctx, async (sql) => {
    const [w] = await sql<
      BalanceRow[]
    >`select w.*, public.turns_today(${userId}) as turns from public.get_or_create_wallet(${userId}, ${config.WELCOME_BONUS_TOKENS}, ${
      ctx.clientKey ?? null
    }, ${config.WELCOME_BONUS_DAILY_PER_ADDRESS}) w`
    return [w!, Number(w!.turns)] as const
  }).catch((err: unknown) => {
    // a token that outlived its account (deleted since it was issued): 401, as the chat answers it (spec §7.9)
    if (err instanceof DomainError && err.code === 'not_found') {
      throw new DomainError('unauthorized', 'The account of this token no longer exists; sign in again')
    }
    throw err
  })
  const tier: Tier = row.subscription_tier
  const limits = tierLimits(config, tier)
  return {
    user_id: userId,
    token_balance: Number(row.token_balance),
    subscription_tier: tier,
    pending_reservations: { count: Number(row.pending_count), tokens: Number(row.pending_tokens) },
    welcome_bonus_withheld: row.welcome_withheld,
    limits: {
      max_tokens_per_request: limits.maxTokens,
      daily_limit: limits.dailyLimit,
      turns_today: turns,
      top_k: limits.topK,
      rerank_n: limits.rerankN,
    },
  }
}

/** The reasons the ledger's check constraint allows (wallet migration). */
export type LedgerReason = (typeof LEDGER_REASONS)[number]

/** The caller's own ledger entries, newest first, through RLS. */
export async function listOwnLedger({ ctx, principal, input }: { ctx: ServiceContext; principal: Principal; input: { limit: number; offset: number } }) {
  if (principal.kind !== 'user') throw new DomainError('forbidden', 'This endpoint needs a user token')
  return asUser(ctx.deps.sql, { ...principal.claims, sub: principal.userId }, async (tx) => {
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.token_ledger`
    const rows = await tx<LedgerRow[]>`select * from public.token_ledger order by id desc limit ${input.limit} offset ${input.offset}`
    return {
      items: rows.map((r) => ({
        id: Number(r.id),
        delta: Number(r.delta),
        reason: r.reason,
        request_id: r.request_id,
        reservation_id: r.reservation_id,
        balance_after: Number(r.balance_after),
        created_at: iso(r.created_at)!,
      })),
      total,
      limit: input.limit,
      offset: input.offset,
    }
  })
}

export type Currency = 'MRU' | 'USD' | 'EUR'
export type PaymentMethod = 'cash' | 'bank_transfer' | 'mobile_money' | 'bankily' | 'masrvi' | 'sedad'
export type TransactionType = 'topup' | 'refund' | 'promotion' | 'api_cost' | 'server_cost' | 'infrastructure'

export interface TopUpInput {
  user_id: string
  tokens: number
  amount: number
  currency: Currency
  payment_method: PaymentMethod
  reference?: string | undefined
}

function createdBy(principal: Principal): string {
  return principal.kind === 'user' ? principal.userId : principal.kind === 'service' ? 'service_role' : 'admin_key'
}

export async function topUp(
  { ctx, principal, input, idempotencyKey }: { ctx: ServiceContext; principal: Principal; input: TopUpInput; idempotencyKey?: string | undefined },
) {
  // the user id as PostgreSQL writes it (lower case): the same request with the id in capitals is a replay
  const canonical = {
    user_id: input.user_id.toLowerCase(),
    tokens: input.tokens,
    amount: input.amount,
    currency: input.currency,
    payment_method: input.payment_method,
    reference: input.reference ?? null,
  }
  const hash = idempotencyKey ? sha256Hex(JSON.stringify(canonical)) : null
  const row = await rpc(ctx, async (tx) => {
    const [r] = await tx<TopUpRow[]>`select * from public.top_up(${input.user_id}, ${input.tokens}, ${input.amount}, ${input.currency}, ${input.payment_method},
                                                      ${input.reference ?? null}, ${createdBy(principal)}, ${idempotencyKey ?? null}, ${hash},
                                                      ${ctx.deps.config.WELCOME_BONUS_TOKENS})`
    return r!
  })
  if (!row.replayed) ctx.deps.metrics.wallet.tokens.inc({ movement: 'topped_up' }, input.tokens)
  return {
    transaction_id: row.transaction_id,
    user_id: row.user_id,
    tokens: Number(row.tokens),
    new_balance: Number(row.new_balance),
    ledger_entry_id: Number(row.ledger_entry_id),
    amount: input.amount,
    currency: input.currency,
    payment_method: input.payment_method,
    direction: 'credit' as const,
    type: 'topup' as const,
    replayed: row.replayed,
    created_at: iso(row.created_at)!,
  }
}

function transactionJson(r: TransactionRow) {
  return {
    id: r.id,
    direction: r.direction,
    type: r.type,
    amount: Number(r.amount),
    currency: r.currency,
    payment_method: r.payment_method,
    tokens: Number(r.tokens),
    user_id: r.user_id,
    reference: r.reference,
    description: r.description,
    created_by: r.created_by,
    ledger_entry_id: r.ledger_entry_id === null ? null : Number(r.ledger_entry_id),
    created_at: iso(r.created_at)!,
  }
}

export async function logExpense(
  { ctx, principal, input }: {
    ctx: ServiceContext
    principal: Principal
    input: {
      type: TransactionType
      amount: number
      currency: Currency
      description: string
      reference?: string | undefined
      payment_method?: PaymentMethod | undefined
    }
  },
) {
  const row = await rpc(ctx, async (tx) => {
    const [r] = await tx<TransactionRow[]>`select * from public.log_expense(${input.type}, ${input.amount}, ${input.currency}, ${input.description},
                                                          ${input.reference ?? null}, ${createdBy(principal)}, ${input.payment_method ?? null})`
    return r!
  })
  return transactionJson(row)
}

export async function listTransactions(
  { ctx, input }: {
    ctx: ServiceContext
    input: { direction?: string | undefined; type?: string | undefined; user_id?: string | undefined; limit: number; offset: number }
  },
) {
  return asService(ctx.deps.sql, async (tx) => {
    const [direction, type, user] = [input.direction ?? null, input.type ?? null, input.user_id ?? null]
    const where =
      tx`(${direction}::text is null or direction = ${direction}) and (${type}::text is null or type = ${type}) and (${user}::uuid is null or user_id = ${user})`
    const [{ total }] = await tx<[TotalRow]>`select count(*)::int as total from public.financial_transactions where ${where}`
    const rows = await tx<
      TransactionRow[]
    >`select * from public.financial_transactions where ${where} order by created_at desc, id limit ${input.limit} offset ${input.offset}`
    return { items: rows.map(transactionJson), total, limit: input.limit, offset: input.offset }
  })
}
