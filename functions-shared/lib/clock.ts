// The clock every time-dependent part reads: the system one, or a fake one that tests move by hand.
/**
 * Milliseconds since the epoch, and timers on the same time line. Injected so TTLs, windows, breakers,
 * timeouts and heartbeats are testable without sleeping.
 */
export interface Clock {
  now(): number
  /** calls `fn` once `ms` have passed on this clock; returns a function that cancels it */
  setTimer(ms: number, fn: () => void): () => void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms)
    return () => clearTimeout(handle)
  },
}

/** A clock that moves only when told to; timers fire, in order, as it passes them. */
export class FakeClock implements Clock {
  #now: number
  #timers: { due: number; seq: number; fn: () => void }[] = []
  #seq = 0
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start
  }
  now(): number {
    return this.#now
  }
  setTimer(ms: number, fn: () => void): () => void {
    const timer = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn }
    this.#timers.push(timer)
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer)
    }
  }
  /** timers waiting to fire */
  get pendingTimers(): number {
    return this.#timers.length
  }
  advance(ms: number): void {
    this.set(this.#now + ms)
  }
  set(ms: number): void {
    for (;;) {
      const next = this.#timers.filter((t) => t.due <= ms).sort((a, b) => a.due - b.due || a.seq - b.seq)[0]
      if (!next) break
      this.#timers = this.#timers.filter((t) => t !== next)
      this.#now = Math.max(this.#now, next.due)
      next.fn()
    }
    this.#now = ms
  }
}
