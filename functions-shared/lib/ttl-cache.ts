// Bounded caches with a time-to-live on the injected clock (lru-cache underneath), counting hits and
// misses. Keys carry what invalidates them (a document's ingestion timestamp for chunk text).
import { LRUCache } from 'lru-cache'
import type { Clock } from './clock.ts'

export class TtlCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<string, V>
  hits = 0
  misses = 0
  readonly #onLookup: ((hit: boolean) => void) | undefined

  constructor(options: { ttlMs: number; max: number; clock: Clock; onLookup?: (hit: boolean) => void }) {
    this.#onLookup = options.onLookup
    this.#lru = new LRUCache<string, V>({
      max: options.max,
      ttl: options.ttlMs,
      ttlAutopurge: false,
      ttlResolution: 0,
      perf: { now: () => options.clock.now() },
    })
  }

  get(key: string): V | undefined {
    const value = this.#lru.get(key)
    if (value === undefined) this.misses++
    else this.hits++
    this.#onLookup?.(value !== undefined)
    return value
  }

  set(key: string, value: V): void {
    this.#lru.set(key, value)
  }

  delete(key: string): void {
    this.#lru.delete(key)
  }

  get size(): number {
    return this.#lru.size
  }
}
