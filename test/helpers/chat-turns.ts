// A gateway for chat-turn tests (the offline provider or the OpenAI-compatible test server, on a fake
// clock) and what those tests read: POST /chat, GET /chat/turns/{id}, a student's money, a stored answer.
import type { TestDatabase } from './db.ts'
import type { Sql } from '../../functions-shared/db/client.ts'
import { testConfig } from './app.ts'
import type { TestUser } from './users.ts'
import type { OpenAiServer } from './openai-server.ts'
import { type Gateway, startGateway } from '../../scripts/lib/gateway.ts'
import { FakeClock } from '../../functions-shared/lib/clock.ts'
import { createLogRoot } from '../../functions-shared/lib/logger.ts'
import { createOpenAiProvider } from '../../functions-shared/ai/openai.ts'
import { createOfflineProvider } from '../../functions-shared/ai/offline.ts'

export async function chatGateway(db: TestDatabase, ai: 'offline' | OpenAiServer): Promise<Gateway> {
  const provider = ai === 'offline' ? createOfflineProvider() : createOpenAiProvider({
    apiKey: 'k',
    baseUrl: ai.url,
    chatModel: 'chat-model',
    embeddingModel: 'embed-model',
    rerankModel: 'rerank-model',
    translateModel: 'translate-model',
    dimension: 1536,
    timeoutMs: 60_000,
  })
  const config = testConfig({ LOG_LEVEL: 'silent', EXPIRY_INTERVAL_SECONDS: '0', RATE_LIMIT_CHAT_PER_MINUTE: '1000' })
  return startGateway({
    config,
    sql: db.connect(4),
    port: 0,
    deps: { clock: new FakeClock(Date.now()), ai: provider, logs: createLogRoot({ level: 'silent' }), sources: [] },
  })
}

export const post = (gw: Gateway, user: TestUser, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${gw.url}/functions/v1/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user.token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  })

export const getTurn = (gw: Gateway, user: TestUser, turnId: string, headers: Record<string, string> = {}) =>
  fetch(`${gw.url}/functions/v1/chat/turns/${turnId}`, { headers: { Authorization: `Bearer ${user.token}`, ...headers } })

/** The student's money: balance, Σ ledger, usage rows, reservations, tokens charged. */
export async function moneyOf(sql: Sql, userId: string) {
  const [w] =
    await sql`select w.token_balance::int as balance, (select coalesce(sum(delta), 0)::int from public.token_ledger l where l.user_id = w.user_id) as ledger,
                               (select count(*)::int from public.usage_log u where u.user_id = w.user_id) as usage,
                               (select count(*)::int from public.reservations r where r.user_id = w.user_id) as reservations,
                               (select coalesce(sum(charged), 0)::int from public.usage_log u where u.user_id = w.user_id) as charged
                          from public.wallets w where w.user_id = ${userId}`
  return w as { balance: number; ledger: number; usage: number; reservations: number; charged: number }
}

export const storedAnswerOf = async (sql: Sql, turnId: string) =>
  (await sql`select content, status from public.chat_messages where turn_id = ${turnId} and role = 'teacher'`)[0] as { content: string; status: string }
