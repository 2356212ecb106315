// A count-based circuit breaker around the chat model (spec §8.4): it opens when `threshold` failures
// fall within `windowMs`; while open, calls are refused at once. Once `resetMs` pass with no failure it
// is half-open: one trial call goes through; success closes it, failure opens it again for another
// `resetMs`. An error that `ignore` names (the request's own fault: a prompt the model refuses) says the
// service answered: it counts as a success, so no one caller can open the circuit for everyone. Time
// comes from the injected clock.
import type { Clock } from './clock.ts'

export type CircuitState = 'closed' | 'open' | 'half_open'

export class CircuitOpenError extends Error {
  override name = 'CircuitOpenError'
}

export interface BreakerOptions {
  threshold: number
  windowMs: number
  resetMs: number
  clock: Clock
  onChange?: (s: CircuitState) => void
  /** errors that are the request's fault, not the service's: not counted as failures */
  ignore?: (err: unknown) => boolean
}

export class CircuitBreaker {
  readonly #failures: number[] = []
  #openedAt: number | null = null
  #trialRunning = false
  readonly #o: BreakerOptions

  constructor(options: BreakerOptions) {
    this.#o = options
  }

  get state(): CircuitState {
    if (this.#openedAt === null) return 'closed'
    return this.#o.clock.now() - this.#lastFailure() >= this.#o.resetMs ? 'half_open' : 'open'
  }

  #lastFailure(): number {
    return this.#failures.at(-1) ?? this.#openedAt ?? 0
  }

  /** Runs `fn` unless the circuit is open; counts its failure or success. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const state = this.state
    if (state === 'open' || (state === 'half_open' && this.#trialRunning)) throw new CircuitOpenError('circuit open')
    const trial = state === 'half_open'
    if (trial) this.#trialRunning = true
    try {
      const result = await fn()
      if (trial || this.#openedAt !== null) this.#close()
      return result
    } catch (err) {
      if (!this.#o.ignore?.(err)) this.#fail()
      else if (trial || this.#openedAt !== null) this.#close()
      throw err
    } finally {
      if (trial) this.#trialRunning = false
    }
  }

  #fail(): void {
    const now = this.#o.clock.now()
    this.#failures.push(now)
    while (this.#failures.length > 0 && now - this.#failures[0]! > this.#o.windowMs) this.#failures.shift()
    if (this.#openedAt !== null || this.#failures.length >= this.#o.threshold) {
      const was = this.#openedAt
      this.#openedAt = now
      if (was === null) this.#o.onChange?.('open')
    }
  }

  #close(): void {
    this.#failures.length = 0
    this.#openedAt = null
    this.#o.onChange?.('closed')
  }
}
