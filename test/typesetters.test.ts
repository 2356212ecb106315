// Arabic PDFs from typesetters other than the demo's (test/fixtures/typeset/README.md): what pdf.js reads
// from them, repaired by canonicalize where the repair is sure, judged by the readability check. A page
// whose layer is repaired is stored as written; a page beyond repair goes to the recognizer.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { canonicalize, kashidaCodes, repairArabicLayer, repairSwappedLigatures, repairTexLigatures } from '../functions-shared/text/canonicalize.ts'
import { readability } from '../functions-shared/text/readability.ts'
import { orderAgreement, repairLamAlef, turnedNameOfGod } from '../functions-shared/text/lam-alef.ts'
import { joinHyphenatedWords } from '../functions-shared/text/hyphenation.ts'

const fixture = (name: string) => new URL(`./fixtures/typeset/${name}`, import.meta.url)
const source = { ar: readFileSync(fixture('ar.txt'), 'utf8'), fr: readFileSync(fixture('fr.txt'), 'utf8') }
const words = (text: string) => text.normalize('NFKC').replace(/’/g, "'").match(/[\p{L}\p{M}\p{N}']+/gu) ?? []
const bare = (word: string) => word.replace(/[\u064B-\u065F\u0670\u0640]/g, '')

/** The share of the source's words that the page's canonical text holds, as written and without marks. */
function kept(sourceText: string, canonical: string) {
  const want = words(sourceText)
  const got = new Set(words(canonical))
  const gotBare = new Set([...got].map(bare))
  return { exact: want.filter((w) => got.has(w)).length / want.length, bare: want.filter((w) => gotBare.has(bare(w))).length / want.length }
}

async function pages(name: string) {
  const pdf = await extractPdf(new Uint8Array(readFileSync(fixture(name))), { deadlineMs: 20_000 })
  return pdf.pages.map((p) => ({ raw: p.text, canonical: canonicalize(p.text), readability: readability(p.text) }))
}

describe('Arabic text layers of other typesetters', () => {
  it('LibreOffice, justified: the kashida strokes, detached marks and ligatures are repaired, every word as written', async () => {
    const [ar] = await pages('libreoffice-notonaskharabic.pdf')
    expect(ar!.raw).toContain('\u0003') // the strokes are there to repair
    expect(ar!.readability.readable).toBe(true)
    expect(ar!.readability.problems.unmapped).toBe(0)
    expect(kept(source.ar, ar!.canonical)).toEqual({ exact: 1, bare: 1 })
    for (const w of ['معرفة', 'الأسئلة', 'أنّ', 'الدَّرْسُ', 'لا', 'الله']) expect(ar!.canonical).toContain(w)
  })

  it('LibreOffice with Noto Kufi Arabic: lam-alef after a joining letter and the name of God read backwards, so the page fails the check', async () => {
    const [ar, fr] = await pages('libreoffice-notokufiarabic.pdf')
    // what there is to repair: the joined lam-alef and the name turned round, the lone لا and على right
    for (const w of ['مَبادئ الإسالم', 'يتعلّم التالميذ', 'إن شاء هللا', 'لا ينبغي', 'على الفهم']) expect(ar!.canonical).toContain(w)
    expect(kept(source.ar, ar!.canonical).exact).toBeCloseTo(62 / 65, 6)
    // no word's shape tells ("سالم", "قالت" are words): the name does, on a page with no lam-alef read right
    expect(ar!.readability.problems).toMatchObject({ reversedLamAlef: 1, brokenWords: 0 })
    expect(ar!.readability.readable).toBe(false)
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
  })

  it('LibreOffice and XeLaTeX with Amiri, XeLaTeX with Noto Sans Arabic: readable, the words kept', async () => {
    for (const name of ['libreoffice-amiri.pdf', 'xelatex-amiri.pdf', 'xelatex-notosansarabic.pdf']) {
      const [ar] = await pages(name)
      expect(ar!.readability.readable, name).toBe(true)
      const share = kept(source.ar, ar!.canonical)
      expect(share.exact, name).toBeGreaterThanOrEqual(0.95)
      expect(share.bare, name).toBeGreaterThanOrEqual(0.98)
    }
    const [xelatex] = await pages('xelatex-amiri.pdf')
    expect(xelatex!.canonical).toContain('الدَّرْسُ الأوّل') // the damma back on its word, not on the next one
    const [noto] = await pages('xelatex-notosansarabic.pdf')
    expect(noto!.canonical).toContain('على الفهم')
    // a justified line that LibreOffice breaks at its number, put back in order
    const [libreoffice] = await pages('libreoffice-amiri.pdf')
    expect(libreoffice!.canonical).toContain('يقرأ 25 صفحة كل أسبوع يتقدّم بسرعة كبيرة.')
  })

  it('XeLaTeX with Noto Naskh Arabic: the alef of lam-alef, mapped to the end-of-text mark, is read as alef; a line drawn around a Latin word is read right to left', async () => {
    const [ar, fr] = await pages('xelatex-notonaskharabic.pdf')
    expect(ar!.raw).toContain('\u061D') // what there is to repair
    expect(ar!.canonical).not.toContain('\u061D')
    expect(ar!.readability.readable).toBe(true)
    expect(ar!.readability.problems.strange).toBe(0)
    for (const w of ['مَبادئ الإسلام', 'يتعلّم التلاميذ', 'يتقدّم بسرعة كبيرة. نستعمل برنامج Python لحساب المعدّل']) expect(ar!.canonical).toContain(w)
    expect(kept(source.ar, ar!.canonical).exact).toBeGreaterThanOrEqual(0.98)
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
  })

  it('Chromium with Amiri: its lines, drawn from the left, are read right to left; a ligature maps to nothing, so the page goes to the recognizer', async () => {
    const [ar] = await pages('chromium-amiri.pdf')
    expect(ar!.canonical).toContain('نستعمل برنامج Python لحساب')
    expect(ar!.canonical).toContain('يقرأ 25 صفحة كل أسبوع')
    expect(ar!.readability.readable).toBe(false)
  })

  it('Chromium with vowelled Arabic: each mark, drawn apart from its letter, goes back on it, and the words stay whole', async () => {
    for (const name of ['chromium-notosansarabic.pdf', 'chromium-notonaskharabic.pdf', 'chromium-dejavusans.pdf']) {
      const [ar] = await pages(name)
      expect(ar!.readability.readable, name).toBe(true)
      expect(ar!.readability.problems.brokenWords, name).toBe(0)
      expect(kept(source.ar, ar!.canonical).exact, name).toBeGreaterThanOrEqual(0.95)
      expect(kept(source.ar, ar!.canonical).bare, name).toBe(1)
      for (const w of ['يتعلّم التلاميذ أنّ القراءة', 'نستعمل برنامج Python لحساب المعدّل', 'مَبادئ الإسلام']) expect(ar!.canonical, name).toContain(w)
    }
    // Noto Sans Arabic draws shadda with fatha as one glyph, read as its isolated form (U+FC60)
    const [sans] = await pages('chromium-notosansarabic.pdf')
    expect(sans!.canonical).toContain('الدَّرْسُ الأوّل')
    expect(kept(source.ar, sans!.canonical).exact).toBe(1)
  })

  it('fpdf2 without text shaping: a layer read backwards is turned round before its marks go back on their letters', async () => {
    // fpdf2 2.8 (set_text_shaping off, its default) draws each line's letters in reading order from the left end
    const [ar, fr] = await pages('fpdf2-amiri.pdf')
    expect(ar!.raw).toContain([...'الدَّرْسُ'.normalize('NFKC')].reverse().join('')) // read backwards, each mark before its letter
    expect(ar!.readability.readable).toBe(true)
    expect(kept(source.ar, ar!.canonical)).toEqual({ exact: 1, bare: 1 })
    for (const w of ['الدَّرْسُ الأوّل', 'أنّ القراءة', 'وأنّ الأسئلة', 'هل قرأتَ الدرس', 'غداً إن شاء الله', 'ملخّصاً للقسم']) {
      expect(ar!.canonical).toContain(w.normalize('NFKC'))
    }
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
    // the same, by hand: a mark read before its letter, after a space, stays in its own word
    expect(canonicalize('ةءارقلا ّنأ ذيمالتلا مّلعتي')).toBe('يتعلّم التلاميذ أنّ القراءة'.normalize('NFKC'))
  })

  it('ReportLab after arabic_reshaper and python-bidi: a mark that ends a line drawn in visual order goes back on its word, not to the line above', async () => {
    // each line reshaped (the harakat kept) and put in visual order, then drawn with drawRightString
    const [ar, fr] = await pages('reportlab-amiri.pdf')
    expect(ar!.readability.readable).toBe(true)
    expect(kept(source.ar, ar!.canonical)).toEqual({ exact: 1, bare: 1 })
    // "ملخّصاً" ends its line: its tanwin, the first glyph the line draws, stays on it
    expect(ar!.canonical).toContain('ثم أكتب ملخّصاً للقسم.'.normalize('NFKC'))
    expect(ar!.canonical).toContain('كبيرة. نستعمل برنامج Python')
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
  })

  it('reads the French page of every file whole', async () => {
    for (
      const name of [
        'libreoffice-notonaskharabic.pdf',
        'libreoffice-amiri.pdf',
        'libreoffice-notokufiarabic.pdf',
        'xelatex-amiri.pdf',
        'chromium-amiri.pdf',
        'chromium-notosansarabic.pdf',
        'chromium-notonaskharabic.pdf',
        'chromium-dejavusans.pdf',
      ]
    ) {
      const [, fr] = await pages(name)
      expect(fr!.readability.readable, name).toBe(true)
      expect(kept(source.fr, fr!.canonical).bare, name).toBeGreaterThanOrEqual(0.93)
    }
  })
})

describe("a scan with the recognizer's text laid over it", () => {
  it("ocrmypdf (tesseract's renderer): right-to-left words drawn with a mirrored matrix are read in reading order", async () => {
    // the first page of zakat.txt scanned at 150 dpi and given a text layer by ocrmypdf 14 (tesseract 5)
    const [ar] = await pages('ocrmypdf-ara.pdf')
    expect(ar!.readability.readable).toBe(true)
    for (const w of ['الدرس الخامس: الزكاة ركن من أركان الإسلام', 'هي الركن الثالث من أركان الإسلام بعد الشهادتين', 'أي ما يقارب 85 غراما']) {
      expect(ar!.canonical).toContain(w)
    }
    // pairs of consecutive words as the lesson writes them (what the recognizer misread aside)
    const pairs = (text: string) => {
      const w = words(text).map(bare)
      return w.slice(1).map((x, i) => `${w[i]} ${x}`)
    }
    const got = new Set(pairs(ar!.canonical))
    const want = pairs(readFileSync(fixture('zakat.txt'), 'utf8'))
    expect(want.filter((p) => got.has(p)).length / want.length).toBeGreaterThanOrEqual(0.85)
  })
})

describe('a PDF made smaller by Ghostscript', () => {
  it('reads back the Latin ligatures that Ghostscript maps in the wrong byte order', async () => {
    // fr.txt typeset by XeLaTeX, then gs -sDEVICE=pdfwrite -dPDFSETTINGS=/ebook (Ghostscript 10.0)
    const [fr] = await pages('gs-xelatex-fr.pdf')
    expect(fr!.raw).toContain('dé\u6600\u6900nit') // "définit": what there is to repair
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
    for (const w of ['définit', 'réfléchit', 'différentes', 'vérifie', 'finale', 's’effectue', 'afin']) expect(fr!.canonical).toContain(w)
  })

  it('repairSwappedLigatures: a run of byte-swapped codes touching a Latin letter, and nothing else', () => {
    expect(repairSwappedLigatures('o\u6600\uCF00ciel a\u6600\uD200uent \u6600\u6C00euve')).toBe('officiel affluent fleuve')
    // ideographs and Hangul that stand apart from Latin letters, or whose low byte is not zero, are text
    for (const text of ['中文 \u6600 a 中', 'Python 中文', '한국어 word', 'a\u6601b']) expect(repairSwappedLigatures(text)).toBe(text)
  })
})

describe('French from pdflatex in the Cork (T1) encoding', () => {
  it('reads the ligatures that its fonts leave unmapped, and œ read as ÷', async () => {
    // fr.txt by pdflatex with \\usepackage[T1]{fontenc}, without the cm-super fonts: Type 3 bitmap fonts
    const [fr] = await pages('pdflatex-t1-fr.pdf')
    expect(fr!.raw).toContain('o\u001Eciel') // "officiel", the ffi ligature at its Cork code
    expect(fr!.readability.problems.unmapped).toBe(0)
    expect(kept(source.fr, fr!.canonical)).toEqual({ exact: 1, bare: 1 })
    for (const w of ['définit', 'réfléchit', 'différentes', 'officiel', 'Cœur', "l'œuvre"]) expect(fr!.canonical).toContain(w)
  })

  it('repairTexLigatures: only codes 0x1B to 0x1F in words, only in a text with no other control code', () => {
    expect(repairTexLigatures('a\u001Fuent \u001Cn e\u001Bet C÷ur ×uvre 3÷4 a×b')).toBe('affluent fin effet Cœur Œuvre 3÷4 a×b')
    // a font that maps nothing gives codes from 1 up: its text is left to the readability check
    expect(repairTexLigatures('\u0004\u0001\u001C o\u001Eciel')).toBe('\u0004\u0001\u001C o\u001Eciel')
    expect(repairTexLigatures('C÷ur sans ligature')).toBe('C÷ur sans ligature')
  })
})

describe('French typeset in two hyphenated columns', () => {
  it('XeLaTeX: read a column after the other, and every word whole once the breaks at line ends are joined', async () => {
    // fr.txt twice, in two columns 4.7 cm wide: TeX broke "ob-jectifs", "réflé-chit", "com-pare", "véri-fie",
    // "syn-thèse" and "offi-ciel" at their lines' ends
    const pdf = await extractPdf(new Uint8Array(readFileSync(fixture('xelatex-twocolumn-fr.pdf'))), { deadlineMs: 20_000 })
    const asRead = canonicalize(pdf.pages[0]!.text)
    expect(kept(source.fr, asRead).exact).toBeLessThan(0.95)
    const joined = canonicalize(joinHyphenatedWords(pdf.pages)[0]!.text)
    expect(kept(source.fr, joined).exact).toBe(1)
    // the first column, then the second: fr.txt as written, twice
    const written = source.fr.trim().replace(/\s+/g, ' ').replace(/'/g, '’')
    expect(joined).toBe(`${written} ${written}`)
  })
})

describe('repairArabicLayer', () => {
  it('takes out the control codes that stand for kashida, only inside words and only codes that repeat there', () => {
    expect([...kashidaCodes('معرف\u0003\u0003ة ك\u0003ل')]).toEqual(['\u0003'])
    expect(repairArabicLayer('معرف\u0003\u0003ة ك\u0003ل')).toBe('معرفة كل')
    // a lone unmapped glyph is a missing letter, not a stroke: it is left for the readability check
    expect(repairArabicLayer('يتع\u0000ّم')).toBe('يتع\u0000ّم')
    expect(readability(`${'حركة '.repeat(20)}يتع\u0000ّم معر\u0000فة ال\u0000كتاب`).problems.unmapped).toBe(3)
  })

  it('takes out the asterisks that a font maps its kashida glyph to (LibreOffice with KacstBook), only between two letters of a word', () => {
    const layer = 'وأخوات كان هي أمس*ى وص**ار، وتدل على التح**ول من ح**ال إلى ح**ال في الز*من الماض**ي'
    expect(repairArabicLayer(layer)).toBe('وأخوات كان هي أمسى وصار، وتدل على التحول من حال إلى حال في الزمن الماضي')
    expect(readability(`${'حركة '.repeat(20)}${layer}`).readable).toBe(true)
    // an asterisk that a text writes (a footnote's call, emphasis, a multiplication) stays
    expect(repairArabicLayer('انظر الهامش* و **تنبيه** *ملاحظة 3*4')).toBe('انظر الهامش* و **تنبيه** *ملاحظة 3*4')
  })

  it('puts a mark read after a space back on its letter, and drops one with no letter before it', () => {
    expect(repairArabicLayer('أن ّ القراءة')).toBe('أنّ  القراءة')
    expect(repairArabicLayer('الدَّرْس ُالأوّل')).toBe('الدَّرْسُ الأوّل')
    expect(repairArabicLayer('غدا\nًنستعمل')).toBe('غدا\nنستعمل')
  })

  it('reads lam-alef, the name of God and lam with alef maqsura the right way round, and leaves right text alone', () => {
    expect(repairArabicLayer('ل ا ينبغي، فل ا')).toBe('لا ينبغي، فلا')
    expect(repairArabicLayer('إن شاء اهلل وباهلل')).toBe('إن شاء الله وبالله')
    expect(repairArabicLayer('عىل الفهم وإىل المدرسة')).toBe('على الفهم وإلى المدرسة')
    expect(repairArabicLayer('ال{كريم')).toBe('الكريم')
    expect(repairArabicLayer('مبادئ الإسل؝م والتل؝ميذ والإسلَ؝م')).toBe('مبادئ الإسلام والتلاميذ والإسلَام')
    expect(repairArabicLayer('انتهى النص ؝')).toBe('انتهى النص ؝') // the mark where it belongs, after a text
    // a mark's isolated presentation form decomposes to a space and the mark: the word stays whole
    expect(canonicalize('الد\uFC60رْسُ وال\uFE7Eكتاب')).toBe('الدَّرْسُ والْكتاب')
    const right = 'لا إله إلا الله، على المسلم أن يَتَعَلَّمَ. قال: ل و ا حروف.'
    expect(repairArabicLayer(right)).toBe(right)
  })
})

describe('readability of vowelled Arabic', () => {
  it('takes a fully vowelled text (a verse, a poem) for one word per word, not a broken word at each haraka', () => {
    const verse = 'وَأَقِيمُوا الصَّلَاةَ وَآتُوا الزَّكَاةَ وَارْكَعُوا مَعَ الرَّاكِعِينَ. إِنَّ الصَّلَاةَ كَانَتْ عَلَى الْمُؤْمِنِينَ كِتَابًا مَوْقُوتًا. يَتَعَلَّمُ التِّلْمِيذُ قَوَاعِدَ النَّحْوِ فِي الْمَدْرَسَةِ.'
    const r = readability(verse)
    expect(r.problems.brokenWords).toBe(0)
    expect(r.readable).toBe(true)
    // a mark on a digit, a sign inside a word: what a broken font leaves
    expect(readability(`${verse} 0ّ الد الت؝ميذ`).problems.strange).toBe(2)
    // a grammar lesson's marks shown alone, on tatweel or the dotted circle, are no damage
    expect(readability(`${verse} الضمة ـُ والفتحة ◌َ`).problems.strange).toBe(0)
  })
})

describe('readability of a layer that reads lam-alef backwards', () => {
  // a long page with few words where lam-alef follows the article
  const page = 'تقع الواحات في قلب الصحراء حيث تتجمع المياه الجوفية قرب سطح الأرض، فيحفر السكان الآبار ويغرسون النخيل في صفوف منتظمة. ' +
    'ويسقي المزارعون حقولهم في الصباح الباكر قبل أن تشتد الحرارة، ويزرعون تحت ظل النخيل الخضروات والحبوب والبرسيم الذي تأكله المواشي. ' +
    'وفي موسم الحصاد يجتمع أهل القرية لجني التمور وتجفيفها وتخزينها في أماكن جافة، ثم يحملون جزءا منها إلى الأسواق البعيدة على ظهور الجمال. ' +
    'ويحرص الجميع على صيانة السواقي وتنظيف الآبار من الرمال التي تحملها الرياح، لأن حياة الواحة كلها تقوم على حسن استعمال الماء. ' +
    'ويتعلم الأطفال من آبائهم كيف يتسلقون النخلة وكيف يقدرون نضج الثمار من لونها ورائحتها، وتنتقل هذه المعارف من جيل إلى جيل منذ قرون طويلة. ' +
    'ومن أشهر الواحات في البلاد واحات أدرار وتكانت والعصابة، وهي مقصد للزوار في موسم القيطنة حين ينضج التمر ويطيب الهواء.'
  // lam-alef turned round as some fonts leave it: "الاستعمال" → "االستعمال", "الأطفال" → "األطفال"
  const turned = (text: string) => text.replace(/\u0644([\u0627\u0623\u0625\u0622])/g, '$1\u0644')

  it('sends a page whose article reads backwards in two words to the recognizer, however long the page', () => {
    expect(readability(page).readable).toBe(true)
    const layer = turned(page)
    const r = readability(layer)
    expect(r.problems.reversedLamAlef).toBeGreaterThanOrEqual(2)
    expect(r.score).toBeLessThan(0.04)
    expect(r.readable).toBe(false)
    // "اال": the article before a bare alef is as sure a sign as before a hamza-carrying one
    expect(readability(`${page} اال${'ستعمال'} باال${'ستعمال'}`).problems.reversedLamAlef).toBe(2)
  })

  it('takes one such word in a long page for a typo', () => {
    expect(readability(`${page} األطفال`).readable).toBe(true)
  })

  it('fails a page that reads the name of God backwards and no lam-alef after a joining letter the right way round', () => {
    // as LibreOffice with Noto Kufi Arabic leaves it: the joined lam-alef turned, the lone لا right
    const kufi = (text: string) =>
      text.replace(new RegExp(`([${'\u0626\u0628\u062A-\u062E\u0633-\u063A\u0641-\u0647\u064A'}])\u0644([\u0627\u0623\u0625\u0622])`, 'g'), '$1$2\u0644')
        .replace(/الله/g, 'هللا')
    const text = `${page} لا يغيب عن ذكر الله أحد. يتعلم التلاميذ مبادئ الإسلام.`
    expect(readability(text).readable).toBe(true)
    const layer = kufi(text)
    expect(layer).toContain('ذكر هللا أحد. يتعلم التالميذ مبادئ الإسالم')
    expect(layer).toContain(' لا يغيب')
    expect(turnedNameOfGod(layer)).toBe(1)
    expect(readability(layer)).toMatchObject({ readable: false, problems: { reversedLamAlef: 1 } })
    // without the name, the words' shapes pass ("الإسالم" as "سالم", a word): such a page is not caught
    expect(readability(kufi(page)).readable).toBe(true)
    // "هللا" on a page that reads a joined lam-alef right is a word (the dual of هلّل), not a turned layer
    expect(turnedNameOfGod(`${page} هللا`)).toBe(0)
    expect(readability(`${page} هللا`).readable).toBe(true)
  })

  it("never takes a page of the demo curriculum, or another typesetter's, for a layer read backwards by its name of God", async () => {
    const lessons =
      (JSON.parse(readFileSync(new URL('../demo/curriculum.json', import.meta.url), 'utf8')) as { lessons: { language?: string; pages?: string[] }[] }).lessons
    const arabic = lessons.filter((l) => l.language === 'ar').flatMap((l) => l.pages ?? [])
    expect(arabic.length).toBeGreaterThanOrEqual(39)
    for (const text of [...arabic, source.ar, readFileSync(fixture('zakat.txt'), 'utf8')]) {
      expect(turnedNameOfGod(canonicalize(text)), text.slice(0, 40)).toBe(0)
    }
    for (
      const name of [
        'libreoffice-notonaskharabic.pdf',
        'libreoffice-notosansarabic.pdf',
        'libreoffice-amiri.pdf',
        'xelatex-amiri.pdf',
        'xelatex-notonaskharabic.pdf',
        'xelatex-notosansarabic.pdf',
        'chromium-notosansarabic.pdf',
        'chromium-notonaskharabic.pdf',
        'chromium-dejavusans.pdf',
        'chromium-amiri.pdf',
        'fpdf2-amiri.pdf',
        'reportlab-amiri.pdf',
        'ocrmypdf-ara.pdf',
      ]
    ) {
      const [ar] = await pages(name)
      expect(turnedNameOfGod(ar!.canonical), name).toBe(0)
    }
  })
})

describe("lam-alef read backwards, put right by the recognizer's reading (repairLamAlef)", () => {
  it('turns round the alef-lam pairs of a word into the form the reading holds, and no other', () => {
    const layer = 'يتعلم التالميذ مبادئ اإلسالم، قال المعلم: ال تنس المثال.'
    const reading = 'يتعلم التلاميذ مبادئ الإسلام قال المعلم لا تنس المثال'
    const { text, repaired } = repairLamAlef(layer, reading)
    expect(text).toBe('يتعلم التلاميذ مبادئ الإسلام، قال المعلم: لا تنس المثال.')
    expect(repaired).toBe(3)
    // "قال", "المثال" and the article are written alef then lam: the reading has them so, they stay
  })

  it('reads the name of God read backwards as the name in a layer known to read lam-alef backwards, unless the reading holds "هللا" too', () => {
    const layer = 'يتعلم التالميذ مبادئ الإسالم، إن شاء هللا وبهللا فهللا.'
    const reading = 'يتعلم التلاميذ مبادئ الإسلام إن شاء الله'
    expect(repairLamAlef(layer, reading)).toEqual({ text: 'يتعلم التلاميذ مبادئ الإسلام، إن شاء الله وبالله فالله.', repaired: 5 })
    expect(repairLamAlef('التالميذ هللا', 'التلاميذ هللا')).toEqual({ text: 'التلاميذ هللا', repaired: 1 })
    // a layer that reads a joined lam-alef right is not turned: its "هللا" is the word written
    expect(repairLamAlef('الإسلام هللا', 'الإسلام الله').text).toBe('الإسلام هللا')
  })

  it("keeps the layer's marks, and a word the reading does not hold as it is", () => {
    expect(repairLamAlef('اإلسْالمُ', 'الإسلام').text).toBe('الإسْلامُ')
    expect(repairLamAlef('التالميذ', 'الطلاب')).toEqual({ text: 'التالميذ', repaired: 0 })
  })

  it("measures how much of a layer's word order the reading shares", () => {
    expect(orderAgreement('أ ب ج د', 'أ ب ج د')).toBe(1)
    expect(orderAgreement('د ج ب أ', 'أ ب ج د')).toBe(0.25)
    expect(orderAgreement('الزراعة على ضفاف النهر', 'الزراعة على ضفاف النهر يزرع')).toBe(1)
    // a page of 200,000 words is compared by its first words, not word by word with another such page
    // (which would take hours: the test's time-out is the bound)
    const huge = Array.from({ length: 200_000 }, (_, i) => `كلمة${i % 97}`).join(' ')
    expect(orderAgreement(huge, huge)).toBe(1)
    expect(orderAgreement(huge, 'كلمة0')).toBeCloseTo(1 / 2000, 6)
  })
})
