// The circuit breaker and the TTL caches, on a fake clock.
import { describe, expect, it } from 'vitest'
import { CircuitBreaker, CircuitOpenError } from '../functions-shared/lib/circuit-breaker.ts'
import { TtlCache } from '../functions-shared/lib/ttl-cache.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'

const ok = () => Promise.resolve('ok')
const boom = () => Promise.reject(new Error('model down'))

function breaker() {
  const clock = new FakeClock(1_000_000)
  const changes: string[] = []
  const cb = new CircuitBreaker({ threshold: 3, windowMs: 60_000, resetMs: 120_000, clock, onChange: (s) => changes.push(s) })
  return { cb, clock, changes }
}

describe('the circuit breaker', () => {
  it('opens on the 3rd failure within 60 s, and then refuses calls without running them', async () => {
    const { cb, clock, changes } = breaker()
    for (const at of [0, 10_000, 20_000]) {
      clock.set(1_000_000 + at)
      await expect(cb.run(boom)).rejects.toThrow('model down')
    }
    expect(cb.state).toBe('open')
    expect(changes).toEqual(['open'])
    let ran = false
    await expect(cb.run(async () => ((ran = true), 'x'))).rejects.toBeInstanceOf(CircuitOpenError)
    expect(ran).toBe(false)
  })

  it('stays closed when the failures are spread beyond the window', async () => {
    const { cb, clock } = breaker()
    await expect(cb.run(boom)).rejects.toThrow()
    clock.advance(10_000)
    await expect(cb.run(boom)).rejects.toThrow()
    clock.advance(61_000)
    await expect(cb.run(boom)).rejects.toThrow()
    expect(cb.state).toBe('closed')
    expect(await cb.run(ok)).toBe('ok')
  })

  it('is half-open 120 s after the last failure: one trial; success closes it', async () => {
    const { cb, clock, changes } = breaker()
    for (let i = 0; i < 3; i++) await expect(cb.run(boom)).rejects.toThrow()
    clock.advance(119_999)
    expect(cb.state).toBe('open')
    clock.advance(1)
    expect(cb.state).toBe('half_open')
    expect(await cb.run(ok)).toBe('ok')
    expect(cb.state).toBe('closed')
    expect(changes).toEqual(['open', 'closed'])
  })

  it('a failed trial opens it again for another 120 s; a second call during the trial is refused', async () => {
    const { cb, clock } = breaker()
    for (let i = 0; i < 3; i++) await expect(cb.run(boom)).rejects.toThrow()
    clock.advance(120_000)
    let release!: () => void
    const trial = cb.run(() => new Promise<string>((_, reject) => (release = () => reject(new Error('still down')))))
    await expect(cb.run(ok)).rejects.toBeInstanceOf(CircuitOpenError)
    release()
    await expect(trial).rejects.toThrow('still down')
    expect(cb.state).toBe('open')
    clock.advance(119_000)
    expect(cb.state).toBe('open')
    clock.advance(1_000)
    expect(cb.state).toBe('half_open')
  })

  it('counts no error that the request itself caused, and takes one as the service answering', async () => {
    const clock = new FakeClock(1_000_000)
    const refused = () => Promise.reject(Object.assign(new Error('prompt too long'), { refused: true }))
    const cb = new CircuitBreaker({ threshold: 3, windowMs: 60_000, resetMs: 120_000, clock, ignore: (err) => (err as { refused?: boolean }).refused === true })
    for (let i = 0; i < 5; i++) await expect(cb.run(refused)).rejects.toThrow('prompt too long')
    expect(cb.state).toBe('closed')
    for (let i = 0; i < 3; i++) await expect(cb.run(boom)).rejects.toThrow()
    clock.advance(120_000)
    await expect(cb.run(refused)).rejects.toThrow('prompt too long') // the trial: the service answered
    expect(cb.state).toBe('closed')
  })
})

describe('TtlCache', () => {
  it('serves within the TTL, forgets after it, and counts hits and misses', () => {
    const clock = new FakeClock(1_000_000)
    const cache = new TtlCache<string>({ ttlMs: 15 * 60_000, max: 100, clock })
    expect(cache.get('k')).toBeUndefined()
    cache.set('k', 'v')
    clock.advance(15 * 60_000 - 1)
    expect(cache.get('k')).toBe('v')
    clock.advance(2)
    expect(cache.get('k')).toBeUndefined()
    expect([cache.hits, cache.misses]).toEqual([1, 2])
  })

  it('stays bounded', () => {
    const cache = new TtlCache<number>({ ttlMs: 60_000, max: 3, clock: new FakeClock(0) })
    for (let i = 0; i < 10; i++) cache.set(`k${i}`, i)
    expect(cache.size).toBe(3)
    expect(cache.get('k9')).toBe(9)
    expect(cache.get('k0')).toBeUndefined()
  })
})
