// The wallet's rows as postgres.js reads them: bigint and numeric columns come back as strings (money
// and balances keep every digit), integer columns as numbers, timestamptz as Date.
import type { CURRENCIES, LEDGER_REASONS, PAYMENT_METHODS, RESERVATION_STATUSES, TIERS, TRANSACTION_DIRECTIONS, TRANSACTION_TYPES } from '../domain/enums.ts'

/** public.get_or_create_wallet, with the turns of the day beside it. */
export interface BalanceRow {
  user_id: string
  token_balance: string
  subscription_tier: (typeof TIERS)[number]
  pending_count: number
  pending_tokens: string
  created_at: Date
  welcome_withheld: boolean
  turns: number
}

/** A row of public.reservations (`select *`, and what public.reserve_tokens returns). */
export interface ReservationRow {
  id: string
  user_id: string
  estimated: number
  actual: number | null
  charged: number | null
  status: (typeof RESERVATION_STATUSES)[number]
  request_id: string | null
  created_at: Date
  expires_at: Date
  finalized_at: Date | null
}

/** A row of public.token_ledger. */
export interface LedgerRow {
  id: string
  user_id: string
  delta: string
  reason: (typeof LEDGER_REASONS)[number]
  request_id: string | null
  reservation_id: string | null
  balance_after: string
  created_at: Date
}

/** What public.finalize_reservation and public.finalize_chat_turn return. */
export interface SettlementRow {
  reservation_id: string
  user_id: string
  status: 'finalized'
  estimated: number
  actual: number
  charged: number
  refunded: number
  uncovered: number
  token_balance: string
  ledger_entry_id: string | null
  /** the request's, else the reservation's, else the reservation id: never null */
  request_id: string
}

/** What public.expire_reservations returns. */
export interface ExpiryRow {
  expired: number
  tokens: string
}

/** What public.top_up returns. */
export interface TopUpRow {
  transaction_id: string
  user_id: string
  tokens: string
  new_balance: string
  ledger_entry_id: string
  replayed: boolean
  created_at: Date
}

/** A row of public.financial_transactions (`select *`, and what public.log_expense returns). */
export interface TransactionRow {
  id: string
  direction: (typeof TRANSACTION_DIRECTIONS)[number]
  type: (typeof TRANSACTION_TYPES)[number]
  amount: string
  currency: (typeof CURRENCIES)[number]
  payment_method: (typeof PAYMENT_METHODS)[number] | null
  tokens: string
  user_id: string | null
  reference: string | null
  description: string | null
  created_by: string
  idempotency_key: string | null
  request_hash: string | null
  ledger_entry_id: string | null
  created_at: Date
}
