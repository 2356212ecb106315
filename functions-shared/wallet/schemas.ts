// The request and response shapes of the wallet routes (/wallet): amounts, balances, reservations,
// transactions, top-ups and settlements, as they validate and as GET /docs shows them.
import { z } from '@hono/zod-openapi'
import { CURRENCIES, PAYMENT_METHODS, RESERVATION_STATUSES, TIERS, TRANSACTION_DIRECTIONS, TRANSACTION_TYPES } from '../domain/enums.ts'

export const Currency = z.enum(CURRENCIES)
export const PaymentMethod = z.enum(PAYMENT_METHODS)
// at most two decimals, exactly: zod's multipleOf(0.01) allows for floating-point error, and so let
// 0.30000000000000004 through (stored as 0.30, answered as sent) and 5e-324 (an expense "above zero"
// stored as 0.00); an amount is taken only when it is its own value in cents
export const Amount = z
  .number()
  .min(0)
  .max(1e11)
  .refine((a) => Math.round(a * 100) / 100 === a, 'must have at most two decimals')
export const Tokens = z.number().int().min(1).max(10_000_000)

export const BalanceSchema = z
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

export const ReservationSchema = z
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

export const TransactionSchema = z
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

export const TopUpResponse = z
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

export const FinalizeResponse = z
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
