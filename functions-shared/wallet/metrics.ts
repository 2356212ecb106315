// What the wallet counts, on the series of lib/metrics.ts (wallet_tokens_total, wallet_reservations_total).
import type { WalletMetrics } from '../lib/metrics.ts'

/** A reservation made (with the tokens it holds) or refused for want of balance. */
export function countReservation(m: WalletMetrics, outcome: 'reserved' | 'insufficient', tokens = 0): void {
  m.reservations.inc({ outcome })
  if (outcome === 'reserved') m.tokens.inc({ movement: 'reserved' }, tokens)
}
