// What the chat model is told: the teacher's role, the language of the answer, the citation rule and
// the student's hint level. The snippets travel beside the messages (ChatRequest.snippets) and each
// provider places them (the openai provider as a system message before the question).
import type { ChatMessage } from '../ai/provider.ts'
import type { ChatLanguage } from './language.ts'
import { subjectKey } from '../text/subjects.ts'

export type HintLevel = 1 | 2 | 3 | 4 | 5

/** The hint ladder: how much of the answer the teacher gives away, from 1 (everything) to 5 (nothing). */
export const HINT_LADDER: Record<HintLevel, { name: string; instruction: string }> = {
  1: { name: 'direct', instruction: 'Give the complete answer or solution with its final result first, then a short explanation.' },
  2: { name: 'worked', instruction: 'Explain the method step by step and give the final result at the end.' },
  3: {
    name: 'guided',
    instruction:
      'Explain the method and the rule that applies, with the key steps, and let the student carry out the last step; give a final result only for a definition or a fact.',
  },
  4: {
    name: 'hints',
    instruction: 'Do not solve it: point to the rule or the extract that applies and give one or two hints; give neither the steps in full nor the result.',
  },
  5: { name: 'socratic', instruction: 'Answer only with two or three guiding questions that lead the student to the relevant extract; never give the answer.' },
}

const LANGUAGE_NAME: Record<ChatLanguage, string> = {
  fr: 'French',
  ar: 'Modern Standard Arabic',
  hassaniya: 'Hassaniya (the Arabic spoken in Mauritania), written in Arabic script',
}

export interface PromptInput {
  message: string
  language: ChatLanguage
  hintLevel: HintLevel
  history: readonly { role: 'user' | 'assistant'; content: string }[]
  maxChars: number
  subject: string | null
  grade: string | null
}

export function buildMessages(p: PromptInput): ChatMessage[] {
  const context = [p.subject && `subject: ${p.subject}`, p.grade && `grade: ${p.grade}`].filter(Boolean).join(', ')
  const system = [
    'You are a patient teacher of the Mauritanian secondary-school (baccalaureate) curriculum.',
    `Write your answer in ${LANGUAGE_NAME[p.language]}, whatever the language of the extracts.`,
    'Rest every statement on the numbered curriculum extracts you are given and cite them as [n] after the sentence they support. If the extracts do not answer the question, say so plainly and do not invent an answer.',
    `Hint level ${p.hintLevel} of 5 (${HINT_LADDER[p.hintLevel].name}): ${HINT_LADDER[p.hintLevel].instruction}`,
    `Keep the answer under ${p.maxChars} characters.`,
    context && `The student's course: ${context}.`,
  ].filter(Boolean).join('\n')
  return [{ role: 'system', content: system }, ...p.history.map((h) => ({ role: h.role, content: h.content })), { role: 'user', content: p.message }]
}

/** The names of the subjects the demo and the usual portals use; any other slug is shown as it is spelled. */
const SUBJECT_NAMES: Record<string, Record<ChatLanguage, string>> = {
  mathematiques: { fr: 'mathématiques', ar: 'الرياضيات', hassaniya: 'الرياضيات' },
  physique: { fr: 'physique', ar: 'الفيزياء', hassaniya: 'الفيزياء' },
  chimie: { fr: 'chimie', ar: 'الكيمياء', hassaniya: 'الكيمياء' },
  'physique-chimie': { fr: 'physique-chimie', ar: 'الفيزياء والكيمياء', hassaniya: 'الفيزياء والكيمياء' },
  'sciences-naturelles': { fr: 'sciences naturelles', ar: 'العلوم الطبيعية', hassaniya: 'العلوم الطبيعية' },
  'education-islamique': { fr: 'éducation islamique', ar: 'التربية الإسلامية', hassaniya: 'التربية الإسلامية' },
  arabe: { fr: 'arabe', ar: 'اللغة العربية', hassaniya: 'العربية' },
  francais: { fr: 'français', ar: 'اللغة الفرنسية', hassaniya: 'الفرنسية' },
  anglais: { fr: 'anglais', ar: 'اللغة الإنجليزية', hassaniya: 'الإنجليزية' },
  histoire: { fr: 'histoire', ar: 'التاريخ', hassaniya: 'التاريخ' },
  geographie: { fr: 'géographie', ar: 'الجغرافيا', hassaniya: 'الجغرافيا' },
  'histoire-geographie': { fr: 'histoire-géographie', ar: 'التاريخ والجغرافيا', hassaniya: 'التاريخ والجغرافيا' },
  philosophie: { fr: 'philosophie', ar: 'الفلسفة', hassaniya: 'الفلسفة' },
  'education-civique': { fr: 'éducation civique', ar: 'التربية المدنية', hassaniya: 'التربية المدنية' },
}

export function subjectName(slug: string, language: ChatLanguage): string {
  // a portal's own slug for a known subject (tarbiya-islamiya) reads as that subject's name
  return (SUBJECT_NAMES[slug] ?? SUBJECT_NAMES[subjectKey(slug) ?? ''])?.[language] ?? slug.replaceAll('-', ' ')
}

export interface ClarifyOptions {
  /** the subjects and grades of the ready documents */
  subjects: string[]
  grades: string[]
  /** the subjects the question could be about (a tie), offered first */
  tied: string[]
}

/**
 * The clarifying question (no model): which subject, which class, which point — naming what the
 * catalogue has, or, when the question fits two subjects, those two.
 */
export function clarifyingQuestion(language: ChatLanguage, options: ClarifyOptions = { subjects: [], grades: [], tied: [] }): string {
  const sep = language === 'fr' ? ', ' : '، '
  const names = (slugs: string[]) => slugs.map((s) => subjectName(s, language)).join(sep)
  const subjects = options.subjects.length ? ` (${names(options.subjects)})` : ''
  const grades = options.grades.length ? ` (${options.grades.join(sep)})` : ''
  const or = (slugs: string[]) => slugs.map((s) => subjectName(s, language)).join(language === 'fr' ? ' ou ' : ' أو ')
  if (options.tied.length > 1) {
    return {
      fr: `Ta question peut concerner ${or(options.tied)} : précise la matière, ta classe${grades}, et le point exact que tu ne comprends pas.`,
      ar: `قد يتعلق سؤالك بمادة ${or(options.tied)}: حدّد المادة، وقسمك${grades}، والنقطة التي لم تفهمها بالضبط.`,
      hassaniya: `سؤالك يمكن يكون في ${or(options.tied)}: گول لي المادة، والقسم${grades}، وشنهو اللي ما فهمت بالضبط.`,
    }[language]
  }
  return {
    fr:
      `Pour bien t'aider, précise ta question : de quelle matière s'agit-il${subjects}, en quelle classe es-tu${grades}, et quel point exactement ne comprends-tu pas ?`,
    ar: `لكي أساعدك جيدًا، وضّح سؤالك: ما المادة${subjects}، وفي أي قسم أنت${grades}، وما النقطة التي لم تفهمها بالضبط؟`,
    hassaniya: `باش نعاونك زين، وضّح سؤالك: اشمن مادة${subjects}، وفي اشمن قسم انت${grades}، وشنهو اللي ما فهمت بالضبط؟`,
  }[language]
}

const NO_SOURCES: Record<ChatLanguage, string> = {
  fr: "Je n'ai trouvé aucun passage du programme qui réponde à cette question. Vérifie la matière et la classe, ou reformule ta question.",
  ar: 'لم أجد في المقرر نصًا يجيب عن هذا السؤال. تحقق من المادة والقسم، أو أعد صياغة سؤالك.',
  hassaniya: 'ما لگيت فالمقرر شي يجاوب على سؤالك. شوف المادة والقسم، ولا عاود سؤالك بطريقة أخرى.',
}

/** Said (free of charge) when retrieval finds nothing: the teacher does not answer without sources. */
export const noSourcesAnswer = (language: ChatLanguage) => NO_SOURCES[language]
