// Retries with exponential backoff and full jitter (sleep = random(0, min(cap, base·2^attempt))),
// honouring a server's Retry-After, a fixed number of attempts in all, and only for transient errors.
export interface RetryOptions {
  attempts: number
  baseMs: number
  maxMs: number
  isTransient: (err: unknown) => boolean
  /** a server-given delay for this error, if any */
  retryAfterMs?: (err: unknown) => number | undefined
  sleep: (ms: number) => Promise<void>
  random?: () => number
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void
}

export async function retry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const random = o.random ?? Math.random
  for (let attempt = 1;; attempt++) {
    try {
      return await fn(attempt)
    } catch (err) {
      if (attempt >= o.attempts || !o.isTransient(err)) throw err
      const jittered = Math.floor(random() * Math.min(o.maxMs, o.baseMs * 2 ** (attempt - 1)))
      const delayMs = Math.min(o.maxMs, Math.max(jittered, o.retryAfterMs?.(err) ?? 0))
      o.onRetry?.({ attempt, delayMs, error: err })
      await o.sleep(delayMs)
    }
  }
}

export const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
