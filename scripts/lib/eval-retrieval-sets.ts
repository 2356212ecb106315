// The labelled sets of `npm run eval:retrieval` (scripts/eval-retrieval.ts): the questions and two-turn
// dialogues of eval/, the demo curriculum's lessons they point to, each read and checked before a run.
import { readFile } from 'node:fs/promises'

interface Question {
  id: string
  question: string
  language: 'fr' | 'ar' | 'hassaniya'
  lesson: string | null
  page?: number
  expect?: 'clarify'
  cross_lingual?: boolean
  /** other pages that answer it as well ("lesson:page"): a page of a neighbouring lesson that says the same */
  also?: string[]
  /** the set it comes from: '' for eval/retrieval-questions.json, else one of APART */
  set?: string
}

/** one turn of a dialogue of eval/retrieval-dialogues.json: the question and where its answer is */
export interface Turn {
  question: string
  lesson: string
  page: number
  also?: string[]
}

/** two turns: an ordinary question, then an elliptical follow-up that names no subject and is read in its light */
export interface Dialogue {
  id: string
  language: 'fr' | 'ar' | 'hassaniya'
  first: Turn
  second: Turn
}

/** the three readings of the dialogues, by their tallies' key (`dialogues/hybrid/<part>`) and their label in the table */
export const DIALOGUE_PARTS = [
  { part: 'first', label: 'dialogues, first question' },
  { part: 'conversation', label: 'dialogues, follow-up in its conversation' },
  { part: 'alone', label: 'dialogues, follow-up alone' },
] as const

interface Lesson {
  id: string
  path: string
  grade: string
  subject: string
}

// the sets written apart from the first (each without reading the others or the code), by their tallies'
// prefix and their label in the table; a sealed set's misses and evidence are never printed, so that nobody tunes on its
// questions one by one and its figures stay those of questions retrieval was not made for
export const APART = [
  { set: 'fresh', file: 'retrieval-questions-fresh.json', label: 'second set', sealed: false },
  { set: 'third', file: 'retrieval-questions-third.json', label: 'third set', sealed: false },
  { set: 'fourth', file: 'retrieval-questions-fourth.json', label: 'fourth set', sealed: true },
] as const
export const apartSet = (set: string | undefined) => APART.find((a) => a.set === set)

/** where the answer to a question or a turn is: its lesson and page, and the other pages that answer it too */
export const answers = (q: { lesson: string | null; page?: number; also?: string[] }) =>
  [`${q.lesson}:${q.page}`, ...(q.also ?? [])].map((a) => {
    const [lesson = '', page = ''] = a.split(':')
    return { lesson, page: Number(page) }
  })

/** a dialogue's two turns, by name */
export const turns = (d: Dialogue) => [['first', d.first], ['second', d.second]] as const

/**
 * The questions of eval/ (the first set and those written apart), the demo curriculum's lessons with their
 * grade and subject, and the dialogues; every lesson an answer names must be one of the curriculum's.
 */
export async function loadEvalSets(root: string) {
  // the questions retrieval was tuned on, and the sets written apart from them (APART), whose figures tell
  // how retrieval does on questions it was not made for; their tallies are kept apart (`<set>/<mode>/<filters>`)
  const read = async (file: string, set: string) =>
    (JSON.parse(await readFile(`${root}eval/${file}`, 'utf8')) as { questions: Question[] }).questions.map((q) => ({ ...q, set }))
  const questions = [
    ...(await read('retrieval-questions.json', '')),
    ...(await Promise.all(APART.map((a) => read(a.file, a.set)))).flat(),
  ]
  const curriculum = JSON.parse(await readFile(`${root}demo/curriculum.json`, 'utf8')) as { lessons: { id: string; path: string }[] }
  const lessons = new Map<string, Lesson>(
    curriculum.lessons.map((l) => {
      const [, grade = '', subject = ''] = /^fichiers\/([^/]+)\/([^/]+)\//.exec(l.path) ?? []
      return [l.id, { id: l.id, path: l.path, grade, subject }]
    }),
  )
  for (const q of questions) {
    for (const a of q.lesson ? answers(q) : []) if (!lessons.has(a.lesson)) throw new Error(`question ${q.id}: unknown lesson ${a.lesson}`)
  }
  const dialogues = (JSON.parse(await readFile(`${root}eval/retrieval-dialogues.json`, 'utf8')) as { dialogues: Dialogue[] }).dialogues
  for (const d of dialogues) {
    for (const [which, t] of turns(d)) {
      if (!t || typeof t.question !== 'string' || !t.lesson || !Number.isInteger(t.page)) {
        throw new Error(`dialogue ${d.id}: its ${which} turn needs a question, a lesson and a page`)
      }
      for (const a of answers(t)) if (!lessons.has(a.lesson)) throw new Error(`dialogue ${d.id}: unknown lesson ${a.lesson}`)
    }
  }
  return { questions, lessons, dialogues }
}
