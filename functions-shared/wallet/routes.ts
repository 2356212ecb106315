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
import { getBalance, listOwnLedger, listTransactions, logExpense, topUp } from './service.ts'
import { finalize, listOwnReservations, reserve } from './reservations.ts'
import { EXPENSE_TYPES, LEDGER_REASONS, RESERVATION_STATUSES, TRANSACTION_DIRECTIONS } from '../domain/enums.ts'
import { Amount, BalanceSchema, Currency, FinalizeResponse, PaymentMethod, ReservationSchema, Tokens, TopUpResponse, TransactionSchema } from './schemas.ts'
import { serviceContext } from '../http/context.ts'

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
  // the balance fetch counts against its address's welcome allowance
  const clientCtx = (c: Context) => ({ deps, requestId: c.get('requestId') as string, clientKey: rateLimitClient(deps, c) })
  const userId = (p: ReturnType<typeof Object>) => (p as { userId: string }).userId
  return router
    .openapi(balance, async (c) => c.json(await getBalance({ ctx: clientCtx(c), userId: userId(c.get('principal')) }), 200))
    .openapi(
      reservations,
      async (c) => c.json(await listOwnReservations({ ctx: serviceContext(deps, c), principal: c.get('principal'), input: c.req.valid('query') }), 200),
    )
    .openapi(
      ledger,
      async (c) => c.json(await listOwnLedger({ ctx: serviceContext(deps, c), principal: c.get('principal'), input: c.req.valid('query') }), 200),
    )
    .openapi(topup, async (c) => {
      const result = await topUp({
        ctx: serviceContext(deps, c),
        principal: c.get('principal'),
        input: c.req.valid('json'),
        idempotencyKey: c.req.valid('header')['idempotency-key'],
      })
      if (result.replayed) c.header('Idempotent-Replayed', 'true')
      return c.json(result, 201)
    })
    .openapi(expense, async (c) => c.json(await logExpense({ ctx: serviceContext(deps, c), principal: c.get('principal'), input: c.req.valid('json') }), 201))
    .openapi(transactions, async (c) => c.json(await listTransactions({ ctx: serviceContext(deps, c), input: c.req.valid('query') }), 200))
    .openapi(internalReserve, async (c) => c.json(await reserve({ ctx: serviceContext(deps, c), input: c.req.valid('json') }), 201))
    .openapi(internalFinalize, async (c) => c.json(await finalize({ ctx: serviceContext(deps, c), input: { ...c.req.valid('json'), kind: 'manual' } }), 200))
}
