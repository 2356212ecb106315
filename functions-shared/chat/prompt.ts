// What the chat model is told: the teacher's role, the language of the answer, the citation rule and
// the student's hint level. The snippets travel beside the messages (ChatRequest.snippets) and each
// provider places them (the openai provider as a system message before the question).
import type { ChatMessage } from '../ai/provider.ts'
import type { ChatLanguage } from './language.ts'

export type HintLevel = 1 | 2 | 3 | 4 | 5

/** The hint ladder: how much of the answer the teacher gives away, from 1 (everything) to 5 (nothing). */
export const HINT_LADDER: Record<HintLevel, { name: string; instruction: string }> = {
  1: { name: 'direct', instruction: 'Give the complete answer or solution with its final result first, then a short explanation.' },
  2: { name: 'worked', instruction: 'Explain the method step by step and give the final result at the end.' },
  3: { name: 'guided', instruction: 'Explain the method and the rule that applies, with the key steps, and let the student carry out the last step; give a final result only for a definition or a fact.' },
  4: { name: 'hints', instruction: 'Do not solve it: point to the rule or the extract that applies and give one or two hints; give neither the steps in full nor the result.' },
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

const CLARIFY: Record<ChatLanguage, string> = {
  fr: "Pour bien t'aider, précise ta question : de quelle matière s'agit-il (mathématiques, physique-chimie, sciences naturelles, éducation islamique, arabe, histoire), en quelle classe es-tu, et quel point exactement ne comprends-tu pas ?",
  ar: 'لكي أساعدك جيدًا، وضّح سؤالك: ما المادة (الرياضيات، الفيزياء والكيمياء، العلوم الطبيعية، التربية الإسلامية، اللغة العربية، التاريخ)، وفي أي قسم أنت، وما النقطة التي لم تفهمها بالضبط؟',
  hassaniya: 'باش نعاونك زين، وضّح سؤالك: اشمن مادة (الرياضيات، الفيزياء، العلوم الطبيعية، التربية الإسلامية، العربية، التاريخ)، وفي اشمن قسم انت، وشنهو اللي ما فهمت بالضبط؟',
}

/** The clarifying question (no retrieval, no model): which subject, which class, which point. */
export const clarifyingQuestion = (language: ChatLanguage) => CLARIFY[language]

const NO_SOURCES: Record<ChatLanguage, string> = {
  fr: "Je n'ai trouvé aucun passage du programme qui réponde à cette question. Vérifie la matière et la classe, ou reformule ta question.",
  ar: 'لم أجد في المقرر نصًا يجيب عن هذا السؤال. تحقق من المادة والقسم، أو أعد صياغة سؤالك.',
  hassaniya: 'ما لگيت فالمقرر شي يجاوب على سؤالك. شوف المادة والقسم، ولا عاود سؤالك بطريقة أخرى.',
}

/** Said (free of charge) when retrieval finds nothing: the teacher does not answer without sources. */
export const noSourcesAnswer = (language: ChatLanguage) => NO_SOURCES[language]
