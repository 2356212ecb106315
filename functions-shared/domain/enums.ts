// Every set of allowed values the schema's check constraints hold, defined once for TypeScript: the
// request and response schemas take them from here, and test/enums.test.ts compares each with its
// constraint in the database, so a migration that changes one without the other fails the suite.
export const ROLES = ['admin', 'student', 'teacher'] as const
export const TIERS = ['free', 'standard', 'premium'] as const
export const RESERVATION_STATUSES = ['reserved', 'finalized', 'expired'] as const
export const LEDGER_REASONS = ['welcome_bonus', 'topup', 'reservation_hold', 'reservation_release', 'agent_chat', 'reservation_expired'] as const
export const USAGE_KINDS = ['chat', 'clarify', 'manual', 'released'] as const
export const TRANSACTION_DIRECTIONS = ['credit', 'debit'] as const
export const TRANSACTION_TYPES = ['topup', 'refund', 'promotion', 'api_cost', 'server_cost', 'infrastructure'] as const
/** the types an expense (a debit the service records) may have */
export const EXPENSE_TYPES = ['api_cost', 'server_cost', 'infrastructure'] as const
export const CURRENCIES = ['MRU', 'USD', 'EUR'] as const
export const PAYMENT_METHODS = ['cash', 'bank_transfer', 'mobile_money', 'bankily', 'masrvi', 'sedad'] as const
export const SCRAPE_RUN_STATUSES = ['running', 'completed', 'failed', 'interrupted'] as const
export const REFERENCE_STATUSES = ['discovered', 'processing', 'ready', 'failed', 'duplicate'] as const
export const JOB_STATUSES = ['queued', 'parsing', 'tokenizing', 'embedding_request_sent', 'embedding_upserted', 'ready', 'failed'] as const
export const DOCUMENT_STATUSES = ['processing', 'ready', 'failed'] as const
export const DOCUMENT_ORIGINS = ['reference', 'upload'] as const
export const TURN_STATUSES = ['streaming', 'answered', 'clarified', 'cancelled', 'failed', 'interrupted'] as const
export const MESSAGE_ROLES = ['student', 'teacher'] as const
/** a student's message is 'sent'; a teacher's follows its turn */
export const MESSAGE_STATUSES = ['sent', ...TURN_STATUSES] as const

/** Each set and the column whose check constraint holds it. */
export const CHECKED_COLUMNS = {
  'profiles.role': ROLES,
  'wallets.subscription_tier': TIERS,
  'reservations.status': RESERVATION_STATUSES,
  'token_ledger.reason': LEDGER_REASONS,
  'usage_log.kind': USAGE_KINDS,
  'financial_transactions.direction': TRANSACTION_DIRECTIONS,
  'financial_transactions.type': TRANSACTION_TYPES,
  'financial_transactions.currency': CURRENCIES,
  'financial_transactions.payment_method': PAYMENT_METHODS,
  'scrape_runs.status': SCRAPE_RUN_STATUSES,
  'curriculum_references.status': REFERENCE_STATUSES,
  'ingestion_jobs.status': JOB_STATUSES,
  'documents.status': DOCUMENT_STATUSES,
  'documents.origin': DOCUMENT_ORIGINS,
  'chat_turns.status': TURN_STATUSES,
  'chat_messages.role': MESSAGE_ROLES,
  'chat_messages.status': MESSAGE_STATUSES,
} as const satisfies Record<string, readonly string[]>
