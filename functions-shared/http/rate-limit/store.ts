// A sliding-window log: a key may have at most `limit` hits in any window of `windowMs`.
export interface RateLimitDecision {
  allowed: boolean
  /** hits still allowed in the current window after this one */
  remaining: number
  /** when denied: milliseconds until the oldest hit leaves the window */
  retryAfterMs: number
}

export interface RateLimitStore {
  hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateLimitDecision>
}

/** The decision for a window's hits (ascending, already pruned to the window), shared by both stores. */
export function decide(hits: readonly number[], allowed: boolean, limit: number, windowMs: number, nowMs: number): RateLimitDecision {
  if (allowed) return { allowed, remaining: Math.max(0, limit - hits.length), retryAfterMs: 0 }
  const oldest = hits[0] ?? nowMs
  return { allowed, remaining: 0, retryAfterMs: Math.max(1, oldest + windowMs - nowMs) }
}
