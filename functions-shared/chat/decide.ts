// Step 1 of a chat turn, decide_path: answer, or ask a clarifying question (see agent.ts for the order).

import type { DocumentRow } from '../ingestion/documents.ts'
import { tierLimits } from '../config.ts'
import type { refuseBeforeReading } from './settle.ts'
import { detectLanguage } from './language.ts'
import { inferFromCatalogue } from './infer.ts'
import { isSmallTalk } from './small-talk.ts'
import { type PreparedQuery, prepareQuery, type QuestionLanguage, translationUseful } from './query.ts'
import { type ChatInput, type Decision, timed, type TurnContext } from './turn.ts'
import { DomainError } from '../domain/errors.ts'
import { cataloguePlaces, storedFilters } from '../catalogue/filters.ts'
import { namedSubjects } from '../text/subjects.ts'

/** What the wallet's read before the question (refuseBeforeReading) found: its tier, the catalogue's subjects. */
type WalletRead = Awaited<ReturnType<typeof refuseBeforeReading>>

/**
 * Step 1. Answer, or ask. A subject given, or implied by a textbook, is used as is; otherwise the
 * catalogue decides (infer.ts): the subject its best hits agree on, or a clarifying question when the
 * message is small talk (small-talk.ts, before any search), nothing matches, or two subjects are tied.
 */
export async function decidePath(ctx: TurnContext, request: ChatInput, read?: WalletRead): Promise<Decision> {
  return timed(ctx, 'decide_path', async () => {
    // a grade and a subject named in the request, as the catalogue stores them (catalogue/filters.ts: the
    // request reads them in the catalogue's form, and a document stored in another form of the same one
    // is still found); a textbook brings its own
    let input = request
    if (!request.textbook_id && (request.grade || request.subject)) {
      const stored = storedFilters(await cachedPlaces(ctx), { grade: request.grade ?? null, subject: request.subject ?? null })
      input = { ...request, grade: stored.grade ?? undefined, subject: stored.subject ?? undefined }
    }
    const language = input.language ?? detectLanguage(input.message)
    let subject = input.subject ?? null
    let grade = input.grade ?? null
    let reason: Decision['reason'] = 'subject_given'
    let inferred = false
    let inferredGrade: string | null = null
    let tiedSubjects: string[] | undefined
    let inference: Record<string, unknown> | undefined
    let prepared: PreparedQuery | undefined
    let searchText: string | undefined
    if (input.textbook_id) {
      const [doc] = await ctx.deps.sql<Pick<DocumentRow, 'id' | 'grade' | 'subject' | 'status'>[]>`
        select id, grade, subject, status from public.documents where id = ${input.textbook_id!}`
      if (!doc || doc.status !== 'ready') throw new DomainError('not_found', `Textbook ${input.textbook_id} is unknown or not ready`)
      // the textbook's own grade and subject apply: a grade or subject sent with it that differs would
      // filter out every page of the book the student picked
      subject = doc.subject ?? subject
      grade = doc.grade ?? grade
      reason = 'textbook_given'
    } else if (!subject && isSmallTalk(input.message)) {
      reason = 'small_talk'
    } else if (!subject && input.conversation?.subject && !(await namesASubject(ctx, input.message))) {
      // a follow-up that names no subject ("et pour une suite arithmétique ?") is about the conversation's
      // lesson: its grade and subject, searched like an inferred subject (dropped when nothing matches)
      subject = input.conversation.subject
      grade = grade ?? input.conversation.grade
      inferred = true
      reason = 'subject_from_conversation'
      // searched with the question it follows (the lesson's words: "et la deuxième étape ?" has none),
      // ranked by its own words (retrieveStep): on the dialogues of eval:retrieval, the right lesson first
      // for 93 % of follow-ups against 80 % searched alone in the lesson, the right page for 67 % against 60 %
      const previous = (input.history ?? []).filter((h) => h.role === 'user').at(-1)?.content
      if (previous) searchText = `${previous}\n${input.message}`
    } else if (!subject) {
      // prepared once: the retrieval searches the same forms with the same vectors
      prepared = await prepareQuery(ctx.deps, input.message, language, { translate: translationUseful(language, input.document_language) })
      const found = await findInCatalogue(ctx, input, prepared, language, read)
      inference = { kind: found.kind, ...found.evidence }
      if (found.kind === 'match') {
        subject = found.subject
        inferredGrade = found.grade
        inferred = true
        reason = 'subject_inferred_from_catalogue'
      } else {
        reason = found.kind === 'tied' ? 'subjects_tied' : 'no_match'
        tiedSubjects = found.subjects
      }
    }
    const decision: Decision = {
      path: reason === 'small_talk' || reason === 'no_match' || reason === 'subjects_tied' ? 'clarify' : 'answer',
      reason,
      language,
      subject,
      subjectInferred: inferred,
      grade,
      inferredGrade,
      fileId: input.textbook_id ?? null,
      ...(tiedSubjects ? { tiedSubjects } : {}),
      ...(inference ? { inference } : {}),
      ...(prepared ? { prepared } : {}),
      ...(searchText ? { searchText } : {}),
    }
    ctx.log.info({ step: 'decide_path', path: decision.path, reason, language, subject, grade, inferred_grade: inferredGrade, inference }, 'decide_path')
    return decision
  })
}

/** The question (and, when it alone says too little, with the student's last messages) in the catalogue. */
async function findInCatalogue(ctx: TurnContext, input: ChatInput, prepared: PreparedQuery, language: QuestionLanguage, read?: WalletRead) {
  const { deps } = ctx
  const attempt = (query: PreparedQuery, retrievalK?: number) =>
    inferFromCatalogue(
      deps,
      {
        query,
        grade: input.grade ?? null,
        language: input.document_language ?? null,
        ...(retrievalK === undefined ? {} : { retrievalK }),
        ...(read ? { catalogue: read.catalogue } : {}),
      },
      ctx.rt.caches.chunks,
    )
  // the question's search finds the candidates of the subject it chooses too, as many as the retrieval
  // of the tier the wallet read before it (refuseBeforeReading) takes
  const found = await attempt(prepared, read === undefined ? undefined : tierLimits(deps.config, read.tier).topK)
  const recent = (input.history ?? []).filter((h) => h.role === 'user').slice(-2).map((h) => h.content)
  if (found.kind === 'match' || recent.length === 0) return found
  // a follow-up ("and the second one?") takes its subject from what came before (not translated again)
  const withHistory = await attempt(await prepareQuery(deps, [...recent, input.message].join('\n'), language, { translate: false }))
  return withHistory.kind === 'match' ? withHistory : found
}

/** Whether the message names one of the catalogue's subjects ("en chimie", "في التاريخ"). */
async function namesASubject(ctx: TurnContext, message: string): Promise<boolean> {
  const subjects = [...new Set((await cachedPlaces(ctx)).map((p) => p.subject).filter((s): s is string => s !== null))]
  return namedSubjects(message, subjects).length > 0
}

/** The catalogue's grades and subjects (cataloguePlaces), one read shared by the turns of PLACES_TTL_MS; a failed read is not kept. */
function cachedPlaces(ctx: TurnContext) {
  const cache = ctx.rt.caches.places
  let places = cache.get('ready')
  if (!places) {
    places = cataloguePlaces(ctx.deps)
    cache.set('ready', places)
    places.catch(() => cache.delete('ready'))
  }
  return places
}
