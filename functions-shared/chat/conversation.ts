// The conversation a turn follows: its lesson and its recent messages, the model's history.
import type { Deps } from '../deps.ts'
import { DomainError } from '../domain/errors.ts'

export interface ConversationContext {
  id: string
  grade: string | null
  subject: string | null
  /** its recent messages, oldest first, as the model's history */
  history: { role: 'user' | 'assistant'; content: string }[]
}

/**
 * The user's conversation and its last CHAT_HISTORY_MAX_MESSAGES messages that say something (a
 * question, an answer; not an answer that failed), each cut at CHAT_HISTORY_MAX_CHARS. Not found: 404.
 */
export async function loadConversation(deps: Deps, userId: string, conversationId: string): Promise<ConversationContext> {
  const rows = await deps.sql<{ grade: string | null; subject: string | null; role: 'student' | 'teacher' | null; content: string | null }[]>`
    select c.grade, c.subject, m.role, m.content
      from public.conversations c
      left join lateral (
        select m.role, m.content, m.created_at from public.chat_messages m
         where m.conversation_id = c.id and m.content <> '' and m.status <> 'failed' and m.status <> 'streaming'
         order by m.created_at desc limit ${deps.config.CHAT_HISTORY_MAX_MESSAGES}) m on true
     where c.id = ${conversationId} and c.user_id = ${userId}
     order by m.created_at`
  if (rows.length === 0) throw new DomainError('not_found', `Conversation ${conversationId} was not found`)
  const max = deps.config.CHAT_HISTORY_MAX_CHARS
  return {
    id: conversationId,
    grade: rows[0]!.grade,
    subject: rows[0]!.subject,
    history: rows
      .filter((r) => r.role !== null && r.content)
      .map((r) => ({ role: r.role === 'student' ? ('user' as const) : ('assistant' as const), content: r.content!.slice(0, max) })),
  }
}

/** The newest messages of a history whose characters add up to at most `budget`, oldest first. */
export function withinBudget<T extends { content: string }>(history: readonly T[], budget: number): T[] {
  const kept: T[] = []
  let used = 0
  for (let i = history.length - 1; i >= 0; i--) {
    used += history[i]!.content.length
    if (used > budget) break
    kept.unshift(history[i]!)
  }
  return kept
}
