// The chat's pure parts: language detection, subject inference, the estimate and the fake clock's timers.
import { describe, expect, it } from 'vitest'
import { detectLanguage } from '../functions-shared/chat/language.ts'
import { inferSubject } from '../functions-shared/text/subjects.ts'
import { actualFor, estimateFor } from '../functions-shared/chat/settle.ts'
import { buildMessages, HINT_LADDER } from '../functions-shared/chat/prompt.ts'
import { rerankScope } from '../functions-shared/chat/rerank.ts'
import { FakeClock } from '../functions-shared/lib/clock.ts'
import { testConfig } from './helpers/app.ts'
import type { Deps } from '../functions-shared/deps.ts'

describe('detectLanguage', () => {
  it.each([
    ['Comment résoudre une équation ?', 'fr'],
    ['Explique la photosynthèse', 'fr'],
    ['ما هي أركان الإسلام؟', 'ar'],
    ['كيف نحل معادلة من الدرجة الأولى؟', 'ar'],
    ['شنهو الفرق بين الصلاة والزكاة؟', 'hassaniya'],
    ['گاع ما فهمت الدرس', 'hassaniya'],
    ['كيفاش نحل هذ المعادلة؟', 'hassaniya'],
    ['Résous 3x + 2 = 11 : معادلة', 'fr'],
    ['12 + 5 = ?', 'fr'],
  ])('%s → %s', (text, language) => {
    expect(detectLanguage(text)).toBe(language)
  })
})

describe('inferSubject', () => {
  it.each([
    ['Comment résoudre une équation du premier degré ?', 'mathematiques'],
    ['Quelle est la dérivée de x² ?', 'mathematiques'],
    ["Quelle est la célérité d'une onde sonore ?", 'physique'],
    ['Comment fonctionne la photosynthèse dans une cellule ?', 'sciences-naturelles'],
    ['ما هي أركان الإسلام؟', 'education-islamique'],
    ['كيف نحل معادلة من الدرجة الأولى؟', 'mathematiques'],
    ['ما إعراب الفاعل في الجملة؟', 'arabe'],
    ["Quand la Mauritanie a-t-elle obtenu l'indépendance ?", 'histoire'],
    ["Bonjour, tu peux m'aider ?", null],
    ['', null],
  ])('%s → %s', (text, subject) => {
    expect(inferSubject(text)).toBe(subject)
  })

  it('gives up on a tie', () => {
    expect(inferSubject('une équation et une onde')).toBeNull()
  })
})

describe('billing of a turn', () => {
  const deps = { config: testConfig() } as Deps
  it('reserves base + 1 per 200 characters of the longest answer the tier allows', () => {
    expect(estimateFor(deps, 'answer', 'free')).toEqual({ estimated: 15, maxChars: 2000 })
    expect(estimateFor(deps, 'answer', 'standard')).toEqual({ estimated: 45, maxChars: 8000 })
    expect(estimateFor(deps, 'answer', 'premium')).toEqual({ estimated: 85, maxChars: 16000 })
    expect(estimateFor(deps, 'clarify', 'premium').estimated).toBe(2)
  })
  it('charges base + ceil(characters / 200)', () => {
    expect([0, 1, 200, 201, 399, 400].map((n) => actualFor(deps, n))).toEqual([5, 6, 6, 7, 7, 7])
  })
})

describe('prompt', () => {
  it('puts the language, the hint level and the citation rule in the system message, then the history and the question', () => {
    const messages = buildMessages({
      message: 'q',
      language: 'hassaniya',
      hintLevel: 4,
      history: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }],
      maxChars: 2000,
      subject: 'physique',
      grade: '5AS',
    })
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user'])
    expect(messages[0]!.content).toContain('Hassaniya')
    expect(messages[0]!.content).toContain(`Hint level 4 of 5 (hints): ${HINT_LADDER[4].instruction}`)
    expect(messages[0]!.content).toContain('[n]')
    expect(messages[0]!.content).toContain('subject: physique, grade: 5AS')
  })
})

describe('rerankScope', () => {
  it('is the namespace when grade and subject are known, and spells other filters out', () => {
    expect(rerankScope({ grade: '5AS', subject: 'physique' })).toBe('grade-5as-physique')
    expect(rerankScope({ subject: 'physique' })).toBe('all;subject=physique')
    expect(rerankScope({})).toBe('all')
    expect(rerankScope({ grade: '5AS', subject: 'physique', language: 'fr', fileId: 'f' })).toBe('grade-5as-physique;language=fr;file=f')
  })
})

describe('FakeClock timers', () => {
  it('fire in due order as the clock passes them, and not when cancelled', () => {
    const clock = new FakeClock(1000)
    const fired: string[] = []
    clock.setTimer(300, () => fired.push(`b@${clock.now()}`))
    clock.setTimer(100, () => fired.push(`a@${clock.now()}`))
    const cancel = clock.setTimer(200, () => fired.push('cancelled'))
    cancel()
    clock.advance(99)
    expect(fired).toEqual([])
    clock.advance(250)
    expect(fired).toEqual(['a@1100', 'b@1300'])
    expect(clock.now()).toBe(1349)
    expect(clock.pendingTimers).toBe(0)
  })
  it('fires a timer set by a firing timer when it is due within the same advance', () => {
    const clock = new FakeClock(0)
    const fired: number[] = []
    const tick = () => {
      fired.push(clock.now())
      clock.setTimer(10, tick)
    }
    clock.setTimer(10, tick)
    clock.advance(35)
    expect(fired).toEqual([10, 20, 30])
  })
})
