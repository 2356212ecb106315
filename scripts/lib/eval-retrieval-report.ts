// What a run of `npm run eval:retrieval` reports: its figures (printed by --json), the table with the
// misses and evidence asked for, and the check of the figures against their floors in eval/floors.json (--check).
import { readFile } from 'node:fs/promises'
import { APART, apartSet, type Dialogue, DIALOGUE_PARTS, type loadEvalSets } from './eval-retrieval-sets.ts'
import { pct, type Tally } from './eval-retrieval-scoring.ts'

export const out = (line = '') => process.stdout.write(`${line}\n`)

/** What a run measured, as its report reads it. */
export interface Run {
  questions: Awaited<ReturnType<typeof loadEvalSets>>['questions']
  dialogues: Dialogue[]
  /** the document of each lesson */
  docOf: Map<string, string>
  modes: string[]
  tallies: Map<string, Tally>
  clarifyItems: Map<string, { n: number; clarified: number }>
  dialogueTallies: Map<string, Tally>
  /** the follow-ups answered from the subject their conversation gave */
  inherited: number
  misses: string[]
  evidence: string[]
  started: number
  dialoguesSeconds: number
}

/** The figures of a run, by row of its table (`<mode>/<filters>`, `<set>/<mode>/<filters>`, `dialogues/hybrid/<part>`). */
export function figuresOf({ tallies, clarifyItems, dialogueTallies, inherited }: Run) {
  const figures = Object.fromEntries(
    [...tallies].filter(([, t]) => t.n > 0).map((
      [key, t],
    ) => [key, {
      questions: t.n,
      page_at_1: t.page1 / t.n,
      document_at_1: t.doc1 / t.n,
      document_at_3: t.doc3 / t.n,
      mrr: t.rr / t.n,
      clarification_rate: t.clarified / t.n,
    }]),
  )
  for (const [mode, c] of clarifyItems) {
    ;(figures as Record<string, unknown>)[`${mode}/off_curriculum`] = { items: c.n, clarified: c.n === 0 ? 0 : c.clarified / c.n }
  }
  // the share of the follow-ups answered from the subject their conversation gave (reason subject_from_conversation)
  const inConversation = dialogueTallies.get('conversation')!.n
  if (inConversation > 0) Object.assign(figures['dialogues/hybrid/conversation']!, { subject_from_conversation: inherited / inConversation })
  return figures
}

/** The run's table, then the misses and evidence asked for (--misses, --evidence) and the time it took. */
export function printReport(
  { questions, dialogues, docOf, modes, tallies, clarifyItems, dialogueTallies, inherited, misses, evidence, started, dialoguesSeconds }: Run,
): void {
  const first = questions.filter((q) => q.set === '')
  const same = first.filter((q) => q.lesson && !q.cross_lingual).length
  out(
    `\n${new Date().toISOString().slice(0, 10)}, node ${process.version}; ${same} questions on ${docOf.size} lessons, ${
      first.length - same - first.filter((q) => !q.lesson).length
    } cross-lingual, ${first.filter((q) => !q.lesson).length} off-curriculum messages; sets written apart: ${
      APART.map((a) => `${questions.filter((q) => q.set === a.set).length} (${a.label}${a.sealed ? ', sealed: its misses are not printed' : ''})`).join(
        ', ',
      )
    }${modes.includes('hybrid') ? `; ${dialogues.length} two-turn dialogues (hybrid)` : ''}\n`,
  )
  const rows: { mode: string; filters: string; label: string; t: Tally; last: string }[] = []
  for (const mode of modes) {
    for (const filters of ['with', 'without'] as const) {
      for (const part of ['', '/cross_lingual', ...APART.map((a) => a.set)]) {
        const a = apartSet(part)
        const t = tallies.get(a ? `${part}/${mode}/${filters}` : `${mode}/${filters}${part}`)!
        if (t.n === 0) continue
        const c = clarifyItems.get(mode)!
        const label = a ? `${t.n} ${a.label}` : part ? `${t.n} cross-lingual` : `${t.n} same language`
        rows.push({ mode, filters, label, t, last: filters === 'without' && !part ? pct(c.clarified, c.n) : '' })
      }
    }
  }
  // the dialogues: no grade or subject given in any turn; the follow-up's share answered from its conversation's subject
  for (const { part, label } of DIALOGUE_PARTS) {
    const t = dialogueTallies.get(part)!
    if (t.n > 0) {
      rows.push({
        mode: 'hybrid',
        filters: 'without',
        label: `${t.n} ${label}`,
        t,
        last: part === 'conversation' ? `${pct(inherited, t.n)} subject from conversation` : '',
      })
    }
  }
  const width = Math.max(16, ...rows.map((r) => r.label.length))
  out(`retrieval  filters   ${'questions'.padEnd(width)} page@1   doc@1   doc@3    MRR    clarified  | off-curriculum clarified`)
  for (const { mode, filters, label, t, last } of rows) {
    out(
      `${mode.padEnd(10)} ${filters.padEnd(8)}  ${label.padEnd(width)} ${pct(t.page1, t.n)}  ${pct(t.doc1, t.n)}  ${pct(t.doc3, t.n)}  ${
        (t.rr / t.n).toFixed(3)
      }   ${pct(t.clarified, t.n)}   | ${last}`,
    )
  }
  for (const m of misses) out(m)
  for (const e of evidence) out(e)
  out(
    `\nevaluation finished in ${((Date.now() - started) / 1000).toFixed(1)} s${
      dialogueTallies.get('first')!.n > 0 ? ` (the dialogues ${dialoguesSeconds.toFixed(1)} s)` : ''
    }`,
  )
}

/** --check: the figures against their floors (a ceiling for clarification_rate); one below sets exit code 1. */
export async function checkFloors(root: string, figures: ReturnType<typeof figuresOf>): Promise<void> {
  const floors = JSON.parse(await readFile(`${root}eval/floors.json`, 'utf8')) as Record<string, Record<string, number>>
  const below: string[] = []
  for (const [key, want] of Object.entries(floors)) {
    if (key.startsWith('_')) continue
    const got = (figures as Record<string, Record<string, number>>)[key]
    for (const [metric, floor] of Object.entries(want)) {
      const value = got?.[metric]
      const ceiling = metric === 'clarification_rate'
      if (value === undefined || (ceiling ? value > floor : value < floor)) {
        below.push(`${key} ${metric} ${value?.toFixed(3)} (${ceiling ? 'ceiling' : 'floor'} ${floor})`)
      }
    }
  }
  if (below.length > 0) {
    process.stderr.write(`retrieval evaluation below its floors: ${below.join('; ')}\n`)
    process.exitCode = 1
  } else out('every figure is at or above its floor (eval/floors.json)')
}
