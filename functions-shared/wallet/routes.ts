// /wallet: the caller's balance, reservations and ledger (Bearer), top-ups, expenses and transactions (admin),
// and manual reserve/finalize for testing (admin, switched off by WALLET_INTERNAL_ROUTES=false).
import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { type Deps, rateLimitClient } from '../deps.ts'
import { adminSecurity, bearerSecurity, createRouter } from '../http/router.ts'
import { errorResponses, ErrorSchema, jsonContent } from '../http/schemas.ts'
import { guards } from '../http/guards.ts'
import { listQuery } from '../http/list.ts'
import { ApiError, ErrorCode } from '../http/errors.ts'
import { finalize, getBalance, listOwnLedger, listOwnReservations, listTransactions, logExpense, reserve, topUp } from './service.ts'
import {
  CURRENCIES,
  EXPENSE_TYPES,
  LEDGER_REASONS,
  PAYMENT_METHODS,
  RESERVATION_STATUSES,
  TIERS,
  TRANSACTION_DIRECTIONS,
  TRANSACTION_TYPES,
} from '../domain/enums.ts'

const Currency = z.enum(CURRENCIES)
const PaymentMethod = z.enum(PAYMENT_METHODS)
// at most two decimals, exactly: zod's multipleOf(0.01) allows for floating-point error, and so let
// 0.30000000000000004 through (stored as 0.30, answered as sent) and 5e-324 (an expense "above zero"
// stored as 0.00); an amount is taken only when it is its own value in cents
const Amount = z
  .number()
  .min(0)
  .max(1e11)
  .refine((a) => Math.round(a * 100) / 100 === a, 'must have at most two decimals')
const Tokens = z.number().int().min(1).max(10_000_000)

const BalanceSchema = z
  .object({
    user_id: z.uuid(),
    token_balance: z.number().int(),
    subscription_tier: z.enum(TIERS),
    pending_reservations: z.object({ count: z.number().int(), tokens: z.number().int() }),
    welcome_bonus_withheld: z.boolean().openapi({
      description:
        "the welcome bonus waits: this client address had its day's welcome bonuses when the wallet was made; a later fetch from an address with room grants it",
    }),
    limits: z.object({
      max_tokens_per_request: z.number().int(),
      daily_limit: z.number().int().nullable().openapi({ description: 'billed turns per UTC day; null = unlimited' }),
      turns_today: z.number().int(),
      top_k: z.number().int(),
      rerank_n: z.number().int(),
    }),
  })
  .openapi('WalletBalance')

const ReservationSchema = z
  .object({
    id: z.uuid(),
    user_id: z.uuid(),
    estimated: z.number().int(),
    actual: z.number().int().nullable(),
    charged: z.number().int().nullable(),
    status: z.enum(RESERVATION_STATUSES),
    request_id: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string(),
    finalized_at: z.string().nullable(),
  })
  .openapi('Reservation')

const TransactionSchema = z
  .object({
    id: z.uuid(),
    direction: z.enum(TRANSACTION_DIRECTIONS),
    type: z.enum(TRANSACTION_TYPES),
    amount: z.number(),
    currency: Currency,
    payment_method: PaymentMethod.nullable(),
    tokens: z.number().int(),
    user_id: z.uuid().nullable(),
    reference: z.string().nullable(),
    description: z.string().nullable(),
    created_by: z.string(),
    ledger_entry_id: z.number().int().nullable(),
    created_at: z.string(),
  })
  .openapi('Transaction')

const TopUpResponse = z
  .object({
    transaction_id: z.uuid(),
    user_id: z.uuid(),
    tokens: z.number().int(),
    new_balance: z.number().int(),
    ledger_entry_id: z.number().int(),
    amount: z.number(),
    currency: Currency,
    payment_method: PaymentMethod,
    direction: z.literal('credit'),
    type: z.literal('topup'),
    replayed: z.boolean().openapi({ description: 'true when this answers a repeated Idempotency-Key' }),
    created_at: z.string(),
  })
  .openapi('TopUpResponse')

const FinalizeResponse = z
  .object({
    reservation_id: z.uuid(),
    user_id: z.uuid(),
    status: z.literal('finalized'),
    estimated: z.number().int(),
    actual: z.number().int(),
    charged: z.number().int(),
    refunded: z.number().int(),
    uncovered: z.number().int(),
    token_balance: z.number().int(),
    ledger_entry_id: z.number().int().nullable(),
    request_id: z.string(),
  })
  .openapi('FinalizeResponse')

const body = <T extends z.ZodType>(schema: T) => ({ body: { content: { 'application/json': { schema } }, required: true } })
const err = (d: string) => jsonContent(ErrorSchema, d)

export function walletRouter(deps: Deps) {
  const { user, admin, limit } = guards(deps)
  const ListQuery = listQuery(deps.config)

  const balance = createRoute({
    method: 'get',
    path: '/balance',
    tags: ['wallet'],
    summary: 'My balance, tier and pending reservations',
    security: bearerSecurity,
    description: `Creates the wallet with the ${deps.config.WELCOME_BONUS_TOKENS}-token welcome bonus on the first fetch (at most ${
      deps.config.WELCOME_BONUS_DAILY_PER_ADDRESS || 'any number of'
    } bonuses per client address and UTC day; past that the bonus is withheld until a fetch from an address with room).`,
    responses: { 200: jsonContent(BalanceSchema, 'The wallet'), ...errorResponses.protected },
  })
  const reservations = createRoute({
    method: 'get',
    path: '/reservations',
    tags: ['wallet'],
    summary: 'My reservations',
    security: bearerSecurity,
    request: { query: ListQuery.extend({ status: z.enum(RESERVATION_STATUSES).optional() }) },
    responses: {
      200: jsonContent(
        z.object({ items: z.array(ReservationSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
        'Newest first',
      ),
      ...errorResponses.protected,
    },
  })
  const LedgerEntry = z
    .object({
      id: z.number().int(),
      delta: z.number().int(),
      reason: z.enum(LEDGER_REASONS),
      request_id: z.string().nullable(),
      reservation_id: z.uuid().nullable(),
      balance_after: z.number().int(),
      created_at: z.string(),
    })
    .openapi('LedgerEntry')
  const ledger = createRoute({
    method: 'get',
    path: '/ledger',
    tags: ['wallet'],
    summary: 'My ledger',
    security: bearerSecurity,
    description: "Every movement of the caller's balance, newest first: holds and releases of reservations, charges (agent_chat), top-ups, expiries.",
    request: { query: ListQuery },
    responses: {
      200: jsonContent(z.object({ items: z.array(LedgerEntry), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }), 'Newest first'),
      ...errorResponses.protected,
    },
  })
  const topup = createRoute({
    method: 'post',
    path: '/topup',
    tags: ['wallet'],
    summary: "Top up a student's wallet",
    security: adminSecurity,
    description:
      'Adds tokens, writes a topup ledger entry and a credit/topup transaction. With an Idempotency-Key header, a retry replays the first answer; the same key with another body gives 422.',
    request: {
      headers: z.object({ 'idempotency-key': z.string().min(1).max(200).optional() }),
      ...body(
        z.object({
          user_id: z.uuid(),
          tokens: Tokens,
          amount: Amount,
          currency: Currency,
          payment_method: PaymentMethod,
          reference: z.string().max(200).optional(),
        }).openapi('TopUpRequest'),
      ),
    },
    responses: {
      201: jsonContent(TopUpResponse, 'Credited'),
      404: err('Unknown user'),
      422: err('Idempotency key reused with a different body'),
      ...errorResponses.protected,
    },
  })
  const expense = createRoute({
    method: 'post',
    path: '/transactions/expense',
    tags: ['wallet'],
    summary: 'Log a system expense',
    security: adminSecurity,
    request: body(
      z.object({
        type: z.enum(EXPENSE_TYPES),
        amount: Amount.refine((a) => a > 0, 'must be positive'),
        currency: Currency,
        description: z.string().trim().min(1).max(500),
        reference: z.string().max(200).optional(),
        payment_method: PaymentMethod.optional(),
      }).openapi('ExpenseRequest'),
    ),
    responses: { 201: jsonContent(TransactionSchema, 'The debit transaction'), ...errorResponses.protected },
  })
  const transactions = createRoute({
    method: 'get',
    path: '/transactions',
    tags: ['wallet'],
    summary: 'Financial transactions',
    security: adminSecurity,
    request: {
      query: ListQuery.extend({
        direction: z.enum(TRANSACTION_DIRECTIONS).optional(),
        type: TransactionSchema.shape.type.optional(),
        user_id: z.uuid().optional(),
      }),
    },
    responses: {
      200: jsonContent(
        z.object({ items: z.array(TransactionSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }).openapi('TransactionList'),
        'Newest first',
      ),
      ...errorResponses.protected,
    },
  })
  const internalReserve = createRoute({
    method: 'post',
    path: '/internal/reserve',
    tags: ['wallet'],
    summary: 'Reserve tokens by hand (testing only)',
    security: adminSecurity,
    request: body(z.object({ user_id: z.uuid(), estimate: Tokens, request_id: z.string().max(128).optional() }).openapi('InternalReserveRequest')),
    responses: {
      201: jsonContent(ReservationSchema, 'Reserved'),
      402: err('Insufficient balance: nothing was reserved'),
      404: err('Unknown user'),
      ...errorResponses.protected,
    },
  })
  const internalFinalize = createRoute({
    method: 'post',
    path: '/internal/finalize',
    tags: ['wallet'],
    summary: 'Finalize a reservation by hand (testing only)',
    security: adminSecurity,
    request: body(
      z.object({ reservation_id: z.uuid(), actual: z.number().int().min(0).max(10_000_000), request_id: z.string().max(128).optional() }).openapi(
        'InternalFinalizeRequest',
      ),
    ),
    responses: {
      200: jsonContent(FinalizeResponse, 'Settled'),
      404: err('Unknown reservation'),
      409: err('Not reserved (already finalized or expired)'),
      ...errorResponses.protected,
    },
  })

  const router = createRouter()
  for (const path of ['/balance', '/reservations', '/ledger']) router.use(path, user, limit('wallet'))
  for (const path of ['/topup', '/transactions', '/transactions/*', '/internal/*']) router.use(path, admin, limit('wallet'))
  router.use('/internal/*', async (c, next) => {
    if (!deps.config.WALLET_INTERNAL_ROUTES) throw new ApiError(ErrorCode.NOT_FOUND, `No route for ${c.req.method} ${c.req.path}`)
    await next()
  })
  const ctx = (requestId: string) => ({ deps, requestId })
  // the balance fetch counts against its address's welcome allowance
  const clientCtx = (c: Context) => ({ deps, requestId: c.get('requestId') as string, clientKey: rateLimitClient(deps, c) })
  const userId = (p: ReturnType<typeof Object>) => (p as { userId: string }).userId
  return router
    .openapi(balance, async (c) => c.json(await getBalance({ ctx: clientCtx(c), userId: userId(c.get('principal')) }), 200))
    .openapi(
      reservations,
      async (c) => c.json(await listOwnReservations({ ctx: ctx(c.get('requestId')), principal: c.get('principal'), input: c.req.valid('query') }), 200),
    )
    .openapi(
      ledger,
      async (c) => c.json(await listOwnLedger({ ctx: ctx(c.get('requestId')), principal: c.get('principal'), input: c.req.valid('query') }), 200),
    )
    .openapi(topup, async (c) => {
      const result = await topUp({
        ctx: ctx(c.get('requestId')),
        principal: c.get('principal'),
        input: c.req.valid('json'),
        idempotencyKey: c.req.valid('header')['idempotency-key'],
      })
      if (result.replayed) c.header('Idempotent-Replayed', 'true')
      return c.json(result, 201)
    })
    .openapi(expense, async (c) => c.json(await logExpense({ ctx: ctx(c.get('requestId')), principal: c.get('principal'), input: c.req.valid('json') }), 201))
    .openapi(transactions, async (c) => c.json(await listTransactions({ ctx: ctx(c.get('requestId')), input: c.req.valid('query') }), 200))
    .openapi(internalReserve, async (c) => c.json(await reserve({ ctx: ctx(c.get('requestId')), input: c.req.valid('json') }), 201))
    .openapi(internalFinalize, async (c) => c.json(await finalize({ ctx: ctx(c.get('requestId')), input: { ...c.req.valid('json'), kind: 'manual' } }), 200))
}
