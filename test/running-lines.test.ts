// Running heads and feet are read off a document's pages before they are chunked.
import { describe, expect, it } from 'vitest'
import { withoutRunningLines } from '../functions-shared/text/running-lines.ts'

const HEAD = "République Islamique de Mauritanie — Ministère de l'Éducation nationale"
const BODY = [
  'Les pourcentages.\nUn pourcentage est une proportion exprimée sur 100.',
  "Augmentation et réduction.\nAugmenter de t %, c'est multiplier par 1 + t/100.",
  "Taux d'évolution.\nLe taux d'évolution est (V1 - V0) / V0.",
  'Exercices.\nCalculer 25 % de 40.',
]
const withEdges = (head: (i: number) => string, foot: (i: number) => string) => BODY.map((b, i) => ({ number: i + 1, text: `${head(i)}\n${b}\n${foot(i)}` }))

describe('withoutRunningLines', () => {
  it('takes a running head and numbered feet off every page but the first that has them, and leaves the text between', () => {
    const out = withoutRunningLines(withEdges(() => HEAD, (i) => `Page ${i + 1} / 4`))
    expect(out[0]!.text).toBe(`${HEAD}\n${BODY[0]}\nPage 1 / 4`)
    for (const [i, page] of out.entries()) if (i > 0) expect(page.text).toBe(BODY[i])
    expect(out.map((p) => p.number)).toEqual([1, 2, 3, 4])
  })

  it('reads an Arabic head, and a head on three pages of five', () => {
    const arabic = 'وزارة التهذيب الوطني - السنة الخامسة'
    const pages = [...BODY, 'Correction.\n25 % de 40 font 10.'].map((b, i) => ({ text: i < 3 ? `${arabic}\n${b}` : b }))
    const out = withoutRunningLines(pages)
    expect(out[0]!.text.startsWith(arabic)).toBe(true)
    expect(out.slice(1).every((p) => !p.text.includes(arabic))).toBe(true)
  })

  it('leaves alone what is not repeated enough, what is not at an end, long lines, and short documents', () => {
    // on two pages of four only
    const twice = withEdges((i) => (i < 2 ? HEAD : 'Leçon'), () => 'fin')
    expect(withoutRunningLines(twice).filter((p) => p.text.includes(HEAD))).toHaveLength(2)
    // the same line inside every page (past its first two lines and before its last two) is text
    const middle = BODY.map((b, i) => ({ text: `Titre\nObjectif ${'abcd'[i]}\nSoit x un nombre réel.\n${b}\nRésumé` }))
    expect(withoutRunningLines(middle).every((p) => p.text.includes('Soit x un nombre réel.'))).toBe(true)
    // a page-long "line" that comes back is not a head
    const long = `${'Une phrase de cours qui revient. '.repeat(5)}`
    expect(withoutRunningLines(BODY.map((b) => ({ text: `${long}\n${b}` }))).every((p) => p.text.includes(long.trim()))).toBe(true)
    // two pages: nothing to compare
    const short = withEdges(() => HEAD, () => 'Page').slice(0, 2)
    expect(withoutRunningLines(short)).toEqual(short)
  })
})
