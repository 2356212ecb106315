// bench:chat's cost of storing a turn: the turn stored (its conversation and messages written as it is
// generated, the default) beside the same turn written nowhere, alternated in one run, and the database
// writes per answer, for an instant answer and for one streamed over 3 s.
import { loadConfig } from '../../functions-shared/config.ts'
import { createLogRoot } from '../../functions-shared/lib/logger.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { memoryTurnWrites } from '../../functions-shared/chat/turn-writes.ts'
import { chatRuntime } from '../../functions-shared/chat/runtime.ts'
import { createOfflineProvider } from '../../functions-shared/ai/offline.ts'
import type { AiProvider } from '../../functions-shared/ai/provider.ts'
import { type Gateway, startGateway } from '../../scripts/lib/gateway.ts'
import { runLoad } from './http-load.ts'

type Load = (url: string, concurrency: number, total: number) => Promise<{ p50: number; p99: number }>
const fmt = (ms: number) => `${ms.toFixed(2)} ms`

/** Prints the stored turn beside the unstored one at 1 and 8 students, then the writes of streamed answers. */
export async function turnStorage(
  gw: Gateway,
  config: ReturnType<typeof loadConfig>,
  sql: Sql,
  load: Load,
  students: { token: string }[],
  questions: { message: string; subject: string; grade: string }[],
): Promise<void> {
  const chatUrl = `${gw.url}/functions/v1/chat`
  const unstored = await startGateway({ config, sql, port: 0, deps: { logs: createLogRoot({ level: 'silent' }), sources: [] } })
  chatRuntime(unstored.deps).writes = memoryTurnWrites()
  const unstoredUrl = `${unstored.url}/functions/v1/chat`
  await load(unstoredUrl, 4, 300)
  const writes = (g: typeof gw) => turnWrites(g.deps.metrics.registry)
  console.log('    stored beside unstored (their conversation and messages written as generated, or nothing written), alternated:')
  for (const [c, total] of [[1, 300], [8, 1200]] as const) {
    await gw.deps.background.idle()
    const before = await writes(gw)
    const storedRuns = []
    const unstoredRuns = []
    // four rounds each, alternated, so that what the machine does meanwhile falls on both
    for (let round = 0; round < 4; round++) {
      storedRuns.push(await load(chatUrl, c, total / 4))
      unstoredRuns.push(await load(unstoredUrl, c, total / 4))
    }
    await gw.deps.background.idle()
    const after = await writes(gw)
    const p50 = (runs: { p50: number }[]) => runs.reduce((a, r) => a + r.p50, 0) / runs.length
    const p99 = (runs: { p99: number }[]) => runs.reduce((a, r) => a + r.p99, 0) / runs.length
    console.log(
      `    ${String(c).padStart(8)}   stored ${fmt(p50(storedRuns))} / ${fmt(p99(storedRuns))}, unstored ${fmt(p50(unstoredRuns))} / ${
        fmt(p99(unstoredRuns))
      }: ` +
        `${(p50(storedRuns) / p50(unstoredRuns) - 1) * 100 >= 0 ? '+' : ''}${((p50(storedRuns) / p50(unstoredRuns) - 1) * 100).toFixed(1)} % at p50; ${
          ((after.sum - before.sum) / Math.max(1, after.count - before.count)).toFixed(2)
        } database writes per answer`,
    )
  }
  await unstored.close()
  await streamedWrites(sql, students, questions)
}

/** The chat_turn_writes histogram's sum and count (the writes of every stored turn, and the turns). */
async function turnWrites(registry: { getSingleMetricAsString(name: string): Promise<string> }): Promise<{ sum: number; count: number }> {
  const text = await registry.getSingleMetricAsString('chat_turn_writes')
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
  return { sum: value('chat_turn_writes_sum'), count: value('chat_turn_writes_count') }
}

/**
 * The database writes of answers streamed over 3 s (the offline answer in 40 pieces, 75 ms apart), 8 at
 * a time: the first text at once, then a batch every CHAT_PERSIST_INTERVAL_MS, then the end.
 */
async function streamedWrites(sql: Sql, students: { token: string }[], questions: { message: string; subject: string; grade: string }[]): Promise<void> {
  const offline = createOfflineProvider()
  const ai: AiProvider = Object.assign(Object.create(offline) as AiProvider, {
    chat: async (request: Parameters<AiProvider['chat']>[0], onDelta: (text: string) => void) => {
      let text = ''
      const result = await offline.chat(request, (t) => void (text += t))
      const size = Math.ceil(text.length / 40)
      for (let i = 0; i < text.length; i += size) {
        await new Promise((r) => setTimeout(r, 75))
        onDelta(text.slice(i, i + size))
      }
      return result
    },
  })
  const config = loadConfig({ LOG_LEVEL: 'silent', RATE_LIMIT_CHAT_PER_MINUTE: '100000000', EXPIRY_INTERVAL_SECONDS: '0', AI_PROVIDER: 'offline' })
  const gw = await startGateway({ config, sql, port: 0, deps: { ai, logs: createLogRoot({ level: 'silent' }), sources: [] } })
  const r = await runLoad({
    url: `${gw.url}/functions/v1/chat`,
    concurrency: 8,
    total: 32,
    bodies: questions,
    headers: students.map((st) => ({ Authorization: `Bearer ${st.token}` })),
  })
  await gw.deps.background.idle()
  const { sum, count } = await turnWrites(gw.deps.metrics.registry)
  console.log(
    `    answers streamed over 3 s (40 pieces), 8 at a time: ${
      (sum / Math.max(1, count)).toFixed(1)
    } database writes per answer (${count} answers, ${r.failures.length} failed; a write per piece would be 42)`,
  )
  await gw.close()
}
