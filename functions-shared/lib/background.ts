// Work that outlives its request: tracked so a shutdown can wait for it, and handed to the platform's
// waitUntil where there is one (Supabase Edge Functions: EdgeRuntime.waitUntil).
export class BackgroundTasks {
  readonly #running = new Set<Promise<unknown>>()
  readonly #waitUntil: ((p: Promise<unknown>) => void) | undefined
  readonly #stopping = new AbortController()

  /** Aborted when the process begins to shut down: long work (a sync) stops at its next step. */
  get stopping(): AbortSignal {
    return this.#stopping.signal
  }

  /** Says that the process is shutting down (see stopping). */
  stop(): void {
    this.#stopping.abort()
  }

  constructor(waitUntil?: (p: Promise<unknown>) => void) {
    this.#waitUntil = waitUntil
  }

  run(task: () => Promise<unknown>): void {
    const p: Promise<unknown> = task()
      .catch(() => {}) // tasks record their own failures
      .finally(() => this.#running.delete(p))
    this.#running.add(p)
    this.#waitUntil?.(p)
  }

  get size(): number {
    return this.#running.size
  }

  /** Resolves when every task started so far has finished. */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running])
  }
}
