// Maths and science read right: accents placed by position (placed-accents.ts), formulas from the glyphs'
// size, baseline and rules (formulas.ts), notation kept in the display text and folded in the match forms
// only (canonicalize.ts, text/fold.ts). The PDFs of test/fixtures/science were made by pdfTeX (OT1 and T1
// fonts), LuaLaTeX, LibreOffice Writer and XeLaTeX; their README says how.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { extractPdf, type TextRun } from '../functions-shared/pdf/extract.ts'
import { joinItems } from '../functions-shared/pdf/lines.ts'
import { canonicalize, matchingForm } from '../functions-shared/text/canonicalize.ts'
import { readFormulas, scriptForm } from '../functions-shared/pdf/formulas.ts'
import { horizontalRules } from '../functions-shared/pdf/rules.ts'
import { placedAccents } from '../functions-shared/pdf/placed-accents.ts'
import { foldText } from '../functions-shared/text/fold.ts'
import { excerpt } from '../functions-shared/chat/excerpt.ts'
import { type Curriculum, CURRICULUM_FILE, type Lesson, lessonPdf, resolveLesson } from '../scripts/lib/demo-portal.ts'

const fixture = (name: string) => new Uint8Array(readFileSync(new URL(`./fixtures/science/${name}`, import.meta.url)))
const stored = async (name: string) => canonicalize((await extractPdf(fixture(name), { deadlineMs: 30_000 })).pages.map((p) => p.text).join('\n'))
const run = (str: string, x: number, width: number, options: Partial<TextRun> & { y?: number; size?: number } = {}): TextRun => {
  const { y = 700, size = 12, ...rest } = options
  return { str, dir: 'ltr', transform: [size, 0, 0, size, x, y], width, height: size, hasEOL: false, ...rest }
}
const read = (runs: TextRun[], rules: Parameters<typeof readFormulas>[1] = []) => canonicalize(joinItems(readFormulas(placedAccents(runs), rules)))

describe('accents placed by position', () => {
  it('composes the accents pdfTeX draws over their letter with its default OT1 fonts, in NFC', async () => {
    const text = await stored('pdflatex-ot1.pdf')
    for (const word of ['arithmétiques', 'géométriques', 'Équation', 'À partir', 'coïncident', 'connaît', 'entièrement', 'trinôme']) {
      expect(text).toContain(word)
    }
    expect(text).not.toMatch(/[´`¸¨ˆ\u0300-\u036F]/u)
    expect(text).toBe(text.normalize('NFC'))
  })

  it('puts an accent drawn after its letter and moved back over it on that letter (Word, QuarkXPress)', () => {
    // "é" as "e", then "´" drawn back over it, then the rest of the word
    expect(read([run('d', 100, 6), run('e', 106, 5.3), run('´finit', 106.2, 26)])).toBe('définit')
  })

  it('puts a raised accent drawn as a run of its own on the letter under it (a capital)', () => {
    expect(read([run('´', 101, 4, { y: 703 }), run('Equation', 100, 44)])).toBe('Équation')
  })

  it('keeps an accent the page shows alone, with room of its own', () => {
    // an acute typed for an apostrophe: the pen goes on after it
    expect(read([run('l´', 100, 8), run('eau', 108.5, 15)])).toBe('l´eau')
    expect(read([run('l´eau', 100, 23)])).toBe('l´eau')
  })
})

describe('formulas from positioned glyphs', () => {
  it('writes pdfTeX maths (OT1) as a student types it: scripts, fractions, radicals, in their sentence', async () => {
    const text = await stored('pdflatex-ot1.pdf')
    for (
      const formula of [
        'on ait uₙ₊₁ = quₙ.',
        'uₙ = u₀qⁿ pour',
        'est égale à (1−qⁿ⁺¹)/(1−q).',
        'x₁ = (−b − √(Δ))/(2a) et la seconde',
        'Lorsque q ≠ 1,',
        'α = −b/(2a) et',
        'a(x − α)².',
        'Δ = b² − 4ac.',
      ]
    ) {
      expect(text).toContain(formula)
    }
  })

  it("reads Latin Modern (T1), LuaLaTeX's Unicode maths and LibreOffice's raised and lowered runs alike", async () => {
    const t1 = await stored('pdflatex-t1.pdf')
    for (const formula of ['E_(c) = 1/2 mv².', '10⁻³ s', 'vₘₐₓ', 'ω₀ = √(k/m), où', '2,5 µm', '25 °C', 'λ = vT.']) expect(t1).toContain(formula)
    const lua = await stored('lualatex-unicode.pdf')
    for (const formula of ['SO₄²⁻,', 'Kₐ = ([A⁻][H₃O⁺])/([AH]) et', 'CH₃COOH + H₂O ⇌ CH₃COO⁻ + H₃O⁺', 'c₁ = c₀ ÷ 10', 'moyenne x̄ des']) {
      expect(lua).toContain(formula)
    }
    const writer = await stored('libreoffice-writer.pdf')
    for (const formula of ['H₂O', 'Fe³⁺', 'm·s⁻²', '½', '√Δ']) expect(writer).toContain(formula)
  })

  it('keeps a left-to-right formula in its right-to-left sentence, its full stop after it', async () => {
    const text = await stored('xelatex-arabic.pdf')
    expect(text).toContain('مميز المعادلة ax² + bx + c = 0 هو العدد Δ = b² − 4ac.')
    expect(text).toContain('القيمة التقريبية π ≈ 3,14.')
  })

  it('writes a script with no Unicode form as ^(...) or _(...), and stacked sub- and superscripts subscript first', () => {
    expect(scriptForm('q', 'sup')).toBe('^(q)')
    expect(scriptForm('c', 'sub')).toBe('_(c)')
    expect(scriptForm('n+1', 'sub')).toBe('ₙ₊₁')
    expect(scriptForm('2−', 'sup')).toBe('²⁻')
    // "SO", then "2−" raised, then "4" lowered under it
    expect(read([run('SO', 100, 15), run('2−', 115, 9, { y: 704, size: 8 }), run('4', 115, 4, { y: 697, size: 8 })])).toBe('SO₄²⁻')
  })

  it("reads no fraction without its rule, nor from a rule much longer than the text around it (a table's line)", () => {
    const above = run('Total', 100, 30, { y: 712 })
    const below = run('Moyenne', 100, 44, { y: 700 })
    expect(read([above, below])).toBe('Total Moyenne')
    expect(read([above, below], [{ x0: 50, x1: 550, y: 706 }])).toBe('Total Moyenne')
    // a table of variations: its rows of cells spread over the line between them, centred on it as a whole
    const row = (cells: string[], y: number, hasEOL = false) => cells.map((c, k) => run(c, 100 + k * 60, 12, { y, hasEOL: hasEOL && k === cells.length - 1 }))
    expect(read([...row(['x', '−∞', '0', '+∞'], 712, true), ...row(['f′(x)', '−', '0', '+'], 700)], [{ x0: 98, x1: 294, y: 706 }])).not.toContain('/')
    // the same two lines centred on a rule as long as they are: a fraction
    expect(read([run('a + b', 100, 30, { y: 712, hasEOL: true }), run('2', 112, 6, { y: 700 })], [{ x0: 99, x1: 131, y: 706 }])).toBe('(a + b)/2')
  })

  it('finds the rules a page draws through its transforms', () => {
    const ops = { save: 1, restore: 2, transform: 3, constructPath: 4, endPath: 5, paintFormXObjectBegin: 6, paintFormXObjectEnd: 7 }
    const fill = 20
    const rules = horizontalRules(
      [1, 3, 4, 2, 4, 4],
      [null, [1, 0, 0, 1, 72, 700], [fill, [], [0, 0, 40, 0.4]], null, [fill, [], [10, 10, 20, 30]], [5, [], [0, 0, 100, 0.2]]],
      ops,
    )
    expect(rules).toEqual([{ x0: 72, x1: 112, y: 700.2 }]) // the tall box is no rule, the clipping path draws nothing
  })
})

describe('any runs', () => {
  it('are read without an error and without losing a letter, whatever their place, size and text (a property)', () => {
    const chars = fc.constantFrom(...Array.from('ae1+−=()´`¸¨ˆ√.,x²ıدرسال \u0301\u0338'))
    const runArb = fc.record({
      str: fc.array(chars, { maxLength: 6 }).map((c) => c.join('')),
      x: fc.double({ min: -50, max: 600, noNaN: true }),
      y: fc.double({ min: 0, max: 800, noNaN: true }),
      size: fc.constantFrom(0, 5, 7, 10, 12),
      width: fc.double({ min: 0, max: 80, noNaN: true }),
      hasEOL: fc.boolean(),
    })
    const rules = fc.array(
      fc.record({
        x0: fc.double({ min: 0, max: 600, noNaN: true }),
        x1: fc.double({ min: 0, max: 600, noNaN: true }),
        y: fc.double({ min: 0, max: 800, noNaN: true }),
      }),
      { maxLength: 3 },
    )
    fc.assert(
      fc.property(fc.array(runArb, { maxLength: 12 }), rules, (drawn, lines) => {
        const runs = drawn.map((r) => run(r.str, r.x, r.width, { y: r.y, size: r.size, hasEOL: r.hasEOL }))
        const text = read(runs, lines)
        // every letter and digit drawn is read (accents may go onto letters, scripts change form)
        const letters = (t: string) => Array.from(t.normalize('NFKD').replace(/ı/g, 'i').replace(/[^a-zدرسال]/g, '')).sort().join('')
        expect(letters(text)).toBe(letters(runs.map((r) => r.str).join('')))
      }),
      { numRuns: 400 },
    )
  })
})

describe('notation in the display text, folded in the match forms only', () => {
  it('stores notation as written and folds only what a typesetter draws (ligatures, presentation forms)', () => {
    expect(canonicalize('x² + ½ m v² ; 2,5 µm à 25 °C ; uₙ₊₁ ; x̄ ; λ ⇌ Δ')).toBe('x² + ½ m v² ; 2,5 µm à 25 °C ; uₙ₊₁ ; x̄ ; λ ⇌ Δ')
    expect(canonicalize('la déﬁnition de ∆ en 𝑥')).toBe('la définition de Δ en x')
    expect(canonicalize('\uFEF7\uFEE3')).toBe('\u0644\u0623\u0645') // the lam-alef ligature and an initial meem, as letters
  })

  it('matches a question that types x2, un+1, Ec or 1/2 with the lesson that writes x², uₙ₊₁, E_(c), ½', () => {
    expect(foldText('x² + uₙ₊₁ + E_(c) + x^(q) + ½ + µm')).toBe(foldText('x2 + un+1 + Ec + xq + 1⁄2 + μm'))
    expect(matchingForm('x² = ½')).toBe('x2 = 1⁄2')
  })

  it("quotes a source's excerpt in the stored form", () => {
    const chunk = 'Le discriminant du trinôme ax² + bx + c est Δ = b² − 4ac. Si Δ > 0, il y a deux racines x₁ = (−b − √(Δ))/(2a) et x₂.'
    expect(excerpt(chunk, ['comment calculer le discriminant de ax2 + bx + c ?'])).toContain('ax² + bx + c est Δ = b² − 4ac.')
  })
})

describe("the demo's PDFs", () => {
  it('draw every character of demo/curriculum.json in a font they embed, so that each is read back', async () => {
    const curriculum = JSON.parse(readFileSync(CURRICULUM_FILE, 'utf8')) as Curriculum
    const byId = new Map<string, Lesson>(curriculum.lessons.map((l) => [l.id, l]))
    for (const lesson of curriculum.lessons.filter((l) => !l.scanned)) {
      const pdf = await lessonPdf(lesson, byId)
      // the standard fonts are not embedded and encode only WinAnsi: λ, ⇌ or √ drawn in them read as other characters
      expect(Buffer.from(pdf).toString('latin1'), lesson.id).not.toMatch(/\/BaseFont\s*\/(Helvetica|Times|Courier|Symbol|ZapfDingbats)/)
      const text = canonicalize((await extractPdf(pdf, { deadlineMs: 30_000 })).pages.map((p) => p.text).join('\n'))
      const written = new Set(Array.from(resolveLesson(lesson, byId).pages.join(' ').normalize('NFC')).filter((c) => !/\s/.test(c)))
      expect([...written].filter((c) => !text.includes(c)), lesson.id).toEqual([])
    }
  }, 120_000)
})
