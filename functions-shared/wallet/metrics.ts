import { Counter, type Registry } from 'prom-client'

export interface WalletMetrics {
  tokens: Counter<'movement'>
  reservations: Counter<'outcome'>
}

const byRegistry = new WeakMap<Registry, WalletMetrics>()

/** Tokens reserved, charged, refunded and expired; reservations by outcome. */
export function walletMetrics(registry: Registry): WalletMetrics {
  let m = byRegistry.get(registry)
  if (!m) {
    m = {
      tokens: new Counter({ name: 'wallet_tokens_total', help: 'Tokens moved, by movement (reserved, charged, refunded, expired, topped_up)', labelNames: ['movement'], registers: [registry] }),
      reservations: new Counter({ name: 'wallet_reservations_total', help: 'Reservations by outcome (reserved, insufficient, finalized, conflict, expired)', labelNames: ['outcome'], registers: [registry] }),
    }
    byRegistry.set(registry, m)
  }
  return m
}

/** A reservation made (with the tokens it holds) or refused for want of balance. */
export function countReservation(registry: Registry, outcome: 'reserved' | 'insufficient', tokens = 0): void {
  const m = walletMetrics(registry)
  m.reservations.inc({ outcome })
  if (outcome === 'reserved') m.tokens.inc({ movement: 'reserved' }, tokens)
}
