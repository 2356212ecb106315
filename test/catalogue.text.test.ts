// Canonicalization, SimHash and the quality gate: the pure rules of the scraper pipeline.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { arabicShare, canonicalize, contentPages, matchingForm, repairReversedArabic } from '../functions-shared/text/canonicalize.ts'
import { blocks, hammingDistance, simhash, tokens, toSigned, toUnsigned } from '../functions-shared/text/simhash.ts'
import { checkQuality, textConfidence } from '../functions-shared/catalogue/quality.ts'

const LESSON_AR = 'الدرس الأول: المعادلات من الدرجة الأولى. نحل المعادلة بإيجاد قيمة المجهول التي تحقق المساواة، ثم نتحقق من الحل بالتعويض في المعادلة الأصلية.'
const LESSON_FR =
  "Leçon 3 : les équations du premier degré. On résout l'équation en isolant l'inconnue, puis on vérifie la solution en la remplaçant dans l'équation de départ."

describe('canonicalize', () => {
  it('keeps the text as written: hamza forms, taa marbuta, tatweel and punctuation', () => {
    expect(canonicalize(LESSON_AR)).toBe(LESSON_AR)
    expect(canonicalize('أحمد إبراهيم آمنة ٱلكتاب: الـــرياضـيات. مؤسسة رئيس')).toBe('أحمد إبراهيم آمنة ٱلكتاب: الـــرياضـيات. مؤسسة رئيس')
  })
  it('folds for matching only: alef forms أ إ آ ٱ to ا, tatweel removed', () => {
    expect(matchingForm('أحمد إبراهيم آمنة ٱلكتاب')).toBe('احمد ابراهيم امنة الكتاب')
    expect(matchingForm('الـــرياضـيات')).toBe('الرياضيات')
  })
  it('collapses whitespace runs to one space and trims', () => {
    expect(canonicalize('  Leçon\t1\n\n  :   les\u00a0nombres  ')).toBe('Leçon 1 : les nombres')
  })
  it('takes control characters out, the C1 ones too (a ToUnicode map can give NEL or CSI, which pdf.js passes)', () => {
    expect(canonicalize('Les\u0000 nombres\u0085entiers\u009B2J et\u007Fdécimaux\u0080')).toBe('Les nombres entiers 2J et décimaux')
  })
  it('removes per-source boilerplate by pattern', () => {
    const text = 'Ministère de l\u2019Éducation Nationale — Page 3 sur 12 Les fractions. www.education.gov.mr'
    expect(canonicalize(text, { boilerplate: ['ministère de l.éducation nationale', 'page \\d+ sur \\d+', 'www\\.education\\.gov\\.mr'] })).toBe(
      '— Les fractions.',
    )
  })
  it('keeps taa marbuta and hamza carriers in the matching form by default, folds them on request', () => {
    expect(matchingForm('مدرسة مؤسسة رئيس')).toBe('مدرسة مؤسسة رئيس')
    expect(matchingForm('مدرسة', { taaMarbutaToHa: true })).toBe('مدرسه')
    expect(matchingForm('مؤسسة رئيس', { hamzaCarriers: true })).toBe('موسسة رييس')
    // the text itself is never folded, whatever the source asks of matching
    expect(canonicalize('مدرسة مؤسسة', { taaMarbutaToHa: true, hamzaCarriers: true })).toBe('مدرسة مؤسسة')
  })
  it('folds Arabic presentation forms to base letters (NFKC)', () => {
    // "السلام" as isolated/initial/medial/final presentation forms, and the lam-alef ligature
    expect(canonicalize('\uFE8D\uFEDF\uFEB4\uFEFC\uFEE1')).toBe('السلام')
    expect(canonicalize('\uFEFB')).toBe('لا')
  })
  it('repairs Arabic lines extracted in visual (reversed) order, keeping numbers and Latin words the right way', () => {
    const reverse = (s: string) => Array.from(s).reverse().join('')
    expect(canonicalize(reverse(LESSON_AR))).toBe(canonicalize(LESSON_AR))
    // in visual order the Arabic is reversed but numbers and Latin words still read left to right
    const withNumbers = 'الدرس 12: المعادلات في الصفحة 345 من كتاب الرياضيات للسنة الرابعة - Maths 4AS'
    const visual = reverse(withNumbers).replace('21', '12').replace('543', '345').replace('SA4 shtaM', 'Maths 4AS')
    expect(repairReversedArabic(visual)).toBe(withNumbers)
  })
  it('leaves logical-order Arabic and French alone', () => {
    expect(repairReversedArabic(LESSON_AR)).toBe(LESSON_AR)
    expect(repairReversedArabic(LESSON_FR)).toBe(LESSON_FR)
  })
  it('skips pages under the minimum length after normalization', () => {
    expect(contentPages(['  12  ', LESSON_FR, 'ـــ  ـــ'], 50)).toEqual([canonicalize(LESSON_FR)])
  })
  it('tells Arabic from French by the share of Arabic letters', () => {
    expect(arabicShare(LESSON_AR)).toBeGreaterThan(0.95)
    expect(arabicShare(LESSON_FR)).toBe(0)
  })
})

describe('simhash', () => {
  it('gives identical texts the same fingerprint (distance 0)', () => {
    expect(hammingDistance(simhash(LESSON_FR), simhash(canonicalize(`  ${LESSON_FR} `)))).toBe(0)
  })
  it('moves a little when one word of a long text changes', () => {
    const long = `${LESSON_FR} ${LESSON_FR.replace('premier', 'second')} ${LESSON_AR} ${LESSON_AR.replace('الأول', 'الثاني')}`
    const changed = long.replace('vérifie', 'contrôle')
    expect(hammingDistance(simhash(long), simhash(changed))).toBeLessThanOrEqual(3)
  })
  it('keeps two different French books apart, though they share the words every French text uses', () => {
    // nine demo lessons (kinematics to respiration) against nine others (acids to weak acids): voting once
    // per occurrence, de, la, les, et... outvoted the rest, and the two books were 2 bits apart: a duplicate
    const lessons =
      (JSON.parse(readFileSync(new URL('../demo/curriculum.json', import.meta.url), 'utf8')) as { lessons: { language: string; pages: string[] }[] }).lessons
        .filter((l) => l.language === 'fr')
    const book = (from: number, to: number) => matchingForm(canonicalize(lessons.slice(from, to).map((l) => l.pages.join('\n')).join('\n')))
    expect(hammingDistance(simhash(book(5, 11)), simhash(book(11, 17)))).toBeGreaterThan(3)
    // a copy of one of them with a word changed is still its duplicate
    expect(hammingDistance(simhash(book(5, 11)), simhash(book(5, 11).replace('vitesse', 'rapidité')))).toBeLessThanOrEqual(3)
  })
  it('moves a lot between unrelated texts', () => {
    expect(hammingDistance(simhash(LESSON_FR), simhash(LESSON_AR))).toBeGreaterThan(10)
  })
  it('is case-insensitive and ignores punctuation (word tokens)', () => {
    expect(tokens("L'Équation, la SOLUTION!")).toEqual(['l', 'équation', 'la', 'solution'])
    expect(simhash('La Solution')).toBe(simhash('la solution!'))
  })
  it('follows the documented bit mapping: one token gives the first 8 bytes of its MD5, big-endian', () => {
    // a single token's votes are its own bits
    const fp = simhash('lycee')
    expect(fp.toString(16).padStart(16, '0')).toBe(createHash('md5').update('lycee').digest().subarray(0, 8).toString('hex'))
  })
  it("gives each distinct token a vote of 1 + ln(its count), with node:crypto's MD5", () => {
    const oracle = (text: string): bigint => {
      const votes = Array<number>(64).fill(0)
      const all = tokens(text)
      for (const token of new Set(all)) {
        const weight = 1 + Math.log(all.filter((t) => t === token).length)
        const word = createHash('md5').update(token).digest().readBigUInt64BE(0)
        for (let i = 0; i < 64; i++) votes[i]! += (word >> BigInt(i)) & 1n ? weight : -weight
      }
      return votes.reduce((fp, v, i) => (v > 0 ? fp | (1n << BigInt(i)) : fp), 0n)
    }
    const word = fc.constantFrom('la', 'équation', 'المعادلة', 'x', 'solution', 'de', 'حل', '3', 'Δ', 'lycée')
    fc.assert(
      fc.property(fc.array(word, { maxLength: 300 }), fc.constantFrom(' ', ', ', '\n'), (words, gap) => {
        const text = words.join(gap)
        expect(simhash(text)).toBe(oracle(text))
      }),
      { numRuns: 300 },
    )
  })
  it("round-trips through PostgreSQL's signed bigint, and splits into four 16-bit blocks", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (fp) => {
        expect(toUnsigned(toSigned(fp))).toBe(fp)
        const [b0, b1, b2, b3] = blocks(fp)
        expect((BigInt(b3) << 48n) | (BigInt(b2) << 32n) | (BigInt(b1) << 16n) | BigInt(b0)).toBe(fp)
      }),
    )
  })
})

describe('quality gate', () => {
  const limits = { minTextChars: 200, maxFileBytes: 100 * 1024 * 1024, minConfidenceAr: 0.7, minConfidenceFr: 0.8 }
  const good = { sizeBytes: 50_000, text: `${LESSON_FR} ${LESSON_FR}`, pageCount: 2, textPages: 2, language: 'fr' as const }

  it('passes a real lesson', () => {
    expect(checkQuality(good, limits)).toEqual({ passed: true, warnings: [] })
  })
  it('names the length check: text too short (N chars below 200 minimum)', () => {
    expect(checkQuality({ ...good, text: 'Leçon 1 : les nombres entiers naturels et leurs propriétés.' }, limits)).toEqual({
      passed: false,
      reason: 'text too short (59 chars below 200 minimum)',
      warnings: [],
    })
  })
  it('refuses files above the size limit', () => {
    expect(checkQuality({ ...good, sizeBytes: limits.maxFileBytes + 1 }, limits).reason).toBe(
      `file too large (${limits.maxFileBytes + 1} bytes above ${limits.maxFileBytes} maximum)`,
    )
  })
  it('refuses text that was not valid UTF-8', () => {
    expect(checkQuality({ ...good, text: `${good.text}\uFFFD` }, limits).reason).toBe('invalid encoding (text is not valid UTF-8)')
  })
  it('refuses scans without a text layer, naming OCR', () => {
    expect(checkQuality({ ...good, text: '', textPages: 0 }, limits).reason).toBe('no text layer (scanned PDF; OCR is not available)')
  })
  it('refuses garbled extraction below the per-language confidence, with the value', () => {
    const garbled = `${'\uE000\uE001\uE002 '.repeat(60)}${LESSON_FR}`
    const result = checkQuality({ ...good, text: garbled }, limits)
    expect(result.passed).toBe(false)
    expect(result.reason).toMatch(/^low OCR confidence \(0\.\d\d below 0\.80\)$/)
  })
  it('uses 0.70 for Arabic and 0.80 for French', () => {
    // a text whose confidence is between the two minimums
    const mixed = `${LESSON_AR} ${LESSON_AR} ${'\uE000'.repeat(Math.round(LESSON_AR.length * 0.66))}`
    const confidence = textConfidence(mixed, 1, 1)
    expect(confidence).toBeGreaterThan(0.7)
    expect(confidence).toBeLessThan(0.8)
    expect(checkQuality({ ...good, text: mixed, language: 'ar' }, limits).passed).toBe(true)
    expect(checkQuality({ ...good, text: mixed, language: 'fr' }, limits).passed).toBe(false)
  })
  it('warns about pages without text', () => {
    expect(checkQuality({ ...good, pageCount: 2, textPages: 2 }, limits).warnings).toEqual([])
    const partial = checkQuality({ ...good, text: `${good.text} ${good.text} ${good.text}`, pageCount: 3, textPages: 2 }, { ...limits, minConfidenceFr: 0.5 })
    expect(partial.warnings).toContain('1 of 3 pages have no text')
  })
})
