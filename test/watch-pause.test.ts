// `npm run admin -- watch` paces its looks by the admin rate limit the server reports (scripts/lib/job-progress.ts).
import { describe, expect, it } from 'vitest'
import { watchPause } from '../scripts/lib/job-progress.ts'

describe('the watch pauses by the rate limit it is told', () => {
  it('looks at its interval while more than half of the limit remains, or when no limit is reported', () => {
    expect(watchPause(100, 2, null)).toBe(100)
    expect(watchPause(100, 2, { limit: 60, remaining: 58 })).toBe(100)
    expect(watchPause(100, 2, { limit: 60, remaining: 31 })).toBe(100)
  })

  it('below half, spreads its looks to spend half the limit a minute', () => {
    // 2 requests a look, 30 a minute: a look every 4 s
    expect(watchPause(100, 2, { limit: 60, remaining: 30 })).toBe(4_000)
    expect(watchPause(100, 2, { limit: 60, remaining: 0 })).toBe(4_000)
    expect(watchPause(100, 1, { limit: 60, remaining: 10 })).toBe(2_000)
    // a slower interval than that is kept
    expect(watchPause(10_000, 2, { limit: 60, remaining: 5 })).toBe(10_000)
    // a window of another length
    expect(watchPause(100, 2, { limit: 60, remaining: 5 }, 30_000)).toBe(2_000)
  })

  it('keeps the other half free: a minute of looks at that pace spends no more than half the limit', () => {
    for (const [limit, perLook] of [[60, 2], [60, 1], [10, 2], [1000, 2]] as const) {
      const pause = watchPause(100, perLook, { limit, remaining: 0 })
      expect(Math.ceil(60_000 / pause) * perLook).toBeLessThanOrEqual(limit / 2 + perLook)
    }
  })
})
