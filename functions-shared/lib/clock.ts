/** Milliseconds since the epoch. Injected so TTLs, windows and breakers are testable without sleeping. */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told to; for tests and simulations. */
export class FakeClock implements Clock {
  #now: number
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start
  }
  now(): number {
    return this.#now
  }
  advance(ms: number): void {
    this.#now += ms
  }
  set(ms: number): void {
    this.#now = ms
  }
}
