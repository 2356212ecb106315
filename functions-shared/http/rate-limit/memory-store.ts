// In-process store (the default, as the spec says): right for one instance.
import { decide, type RateLimitDecision, type RateLimitStore } from './store.ts'

export class MemoryRateLimitStore implements RateLimitStore {
  readonly #hits = new Map<string, number[]>()
  #checks = 0
  readonly #sweepEvery: number

  constructor(options: { sweepEvery?: number } = {}) {
    this.#sweepEvery = options.sweepEvery ?? 1000
  }

  async hit(key: string, limit: number, windowMs: number, nowMs: number): Promise<RateLimitDecision> {
    if (++this.#checks % this.#sweepEvery === 0) this.#sweep(windowMs, nowMs)
    const since = nowMs - windowMs
    const hits = (this.#hits.get(key) ?? []).filter((t) => t > since)
    const allowed = hits.length < limit
    if (allowed) hits.push(nowMs)
    this.#hits.set(key, hits)
    return decide(hits, allowed, limit, windowMs, nowMs)
  }

  /** Keys tracked; stale ones are dropped by a periodic sweep. */
  get size(): number {
    return this.#hits.size
  }

  #sweep(windowMs: number, nowMs: number): void {
    for (const [key, hits] of this.#hits) {
      if ((hits.at(-1) ?? 0) <= nowMs - windowMs) this.#hits.delete(key)
    }
  }
}
