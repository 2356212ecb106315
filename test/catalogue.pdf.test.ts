// Real PDFs, generated here, through pdf.js: French and Arabic text, broken and non-PDF files.
import { describe, expect, it } from 'vitest'
import { makePdf } from '../scripts/lib/pdf.ts'
import { extractPdf, isPdf, MAX_PAGE_CHARS, PdfError, type TextRun } from '../functions-shared/pdf/extract.ts'
import { joinItems } from '../functions-shared/pdf/lines.ts'
import { inflatedSize, MAX_INFLATED_BYTES } from '../functions-shared/pdf/stream-check.ts'
import { deflateSync } from 'node:zlib'
import { arabicShare, canonicalize } from '../functions-shared/text/canonicalize.ts'
import { tokens } from '../functions-shared/text/simhash.ts'
import { createIsolatedExtractor } from '../scripts/lib/pdf-isolate.ts'
import { readPdf } from '../functions-shared/pdf/read.ts'
import { PdfReadersBusy } from '../functions-shared/pdf/types.ts'
import { rawPdf } from './helpers/raw-pdf.ts'
import { threadHosts } from './helpers/hosts.ts'

const stream = (dict: string, data: string) => `<< ${dict} /Length ${data.length} >>\nstream\n${data}\nendstream`

describe('extractPdf', () => {
  it('gives the text of every page, numbered, from a French lesson', async () => {
    const pdf = await makePdf(["Leçon 3 : les équations du premier degré. On résout l'équation en isolant l'inconnue.", 'Exercices : résoudre 3x + 2 = 11.'])
    const out = await extractPdf(pdf, { deadlineMs: 10_000 })
    expect(out.pageCount).toBe(2)
    expect(out.pages).toEqual([
      // (lines kept: DejaVu Sans wraps this one before its last word)
      { number: 1, text: "Leçon 3 : les équations du premier degré. On résout l'équation en isolant\nl'inconnue." },
      { number: 2, text: 'Exercices : résoudre 3x + 2 = 11.' },
    ])
  })

  it('gives Arabic text in logical letter order, its letters as written (hamza forms kept)', async () => {
    const pdf = await makePdf(['الدرس الأول: المعادلات من الدرجة الأولى. نحل المعادلة بإيجاد قيمة المجهول'], { arabic: true })
    const out = await extractPdf(pdf, { deadlineMs: 10_000 })
    const text = canonicalize(out.pages[0]!.text)
    expect(arabicShare(text)).toBeGreaterThan(0.95)
    for (const word of ['المعادلات', 'المجهول', 'الأولى', 'بإيجاد']) expect(text).toContain(word)
    expect(text).not.toMatch(/[\u0000-\u001f]/) // glyphs the font could not map come out as NUL; they are gone
  })

  it('keeps a word a typesetter drew in pieces whole, in reading order, with its hamza (a right-to-left layout)', async () => {
    // drawn word by word from the right margin, as the demo portal's lessons are: "حركة" comes out of
    // pdf.js as two runs, "كة" then "حر", that touch
    const pdf = await makePdf(['نشأت حركة المرابطين في القرن الخامس الهجري'], { arabic: true, rtl: true })
    const text = canonicalize((await extractPdf(pdf, { deadlineMs: 10_000 })).pages[0]!.text)
    expect(text).toBe('نشأت حركة المرابطين في القرن الخامس الهجري')
  })

  it('keeps a mark that ends a word on that word (tanwin, a final haraka or shadda), also beside a quote', async () => {
    // pdfkit draws a word-final mark so that pdf.js gives it at the start of the word before ("فهو عاصٍ"
    // as "ٍفهو" and "عاص"), or as a run of its own, of no width, over its letter ("الصيفَ" as "َ")
    for (
      const line of [
        'ومن تركه مع إقراره بوجوبه فهو عاصٍ آثم يجب عليه القضاء.',
        'يقال «الصيفَ ضيّعتِ اللبن» لمن فرّط، وقولنا «عليٌّ أسد» تشبيه بليغ',
        'وهي عاريّةً أي طلبه، وتُعدّ من أرقى الصور',
        'فإن غُمَّ عليكم فأكملوا العدة ثلاثين يوما',
      ]
    ) {
      const pdf = await makePdf([line], { arabic: true, rtl: true })
      expect(canonicalize((await extractPdf(pdf, { deadlineMs: 10_000 })).pages[0]!.text)).toBe(canonicalize(line))
    }
  })

  it('repairs real extraction output of a PDF whose Arabic is stored in visual (reversed) order', async () => {
    const logical = 'الصلاة عماد الدين، وهي خمس صلوات في اليوم والليلة، يؤديها المسلم في أوقاتها بخشوع وطمأنينة، والزكاة حق واجب في المال'
    // a producer that writes glyphs in visual order: pdf.js then extracts the letters reversed
    const pdf = await makePdf([Array.from(logical).reverse().join('')], { arabic: true })
    const raw = (await extractPdf(pdf, { deadlineMs: 10_000 })).pages[0]!.text
    const words = new Set(tokens(canonicalize(logical)))
    const share = (text: string) => {
      const found = tokens(text)
      return found.filter((w) => words.has(w)).length / found.length
    }
    expect(share(raw.normalize('NFKC'))).toBeLessThan(0.3) // as extracted: mostly reversed words
    expect(share(canonicalize(raw))).toBeGreaterThan(0.8) // repaired: the lesson's own words
  })

  it('refuses a file that is not a PDF', async () => {
    const html = new TextEncoder().encode('<!doctype html><title>Not found</title>')
    expect(isPdf(html)).toBe(false)
    await expect(extractPdf(html, { deadlineMs: 1000 })).rejects.toThrow(PdfError)
  })

  it('refuses a truncated PDF with a reason', async () => {
    const pdf = await makePdf(['Leçon tronquée. '.repeat(50)])
    const truncated = pdf.slice(0, Math.floor(pdf.length / 3))
    await expect(extractPdf(truncated, { deadlineMs: 10_000 })).rejects.toThrow(/unreadable PDF|longer than/)
  })

  it('refuses a PDF whose streams expand beyond the limit before pdf.js inflates them (a decompression bomb)', async () => {
    // one page whose content stream is 8 MB of spaces, 8 KB compressed
    const content = deflateSync(Buffer.alloc(8 * 1024 * 1024, 0x20))
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
    ]
    const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')]
    const offsets: number[] = []
    const length = () => parts.reduce((n, p) => n + p.length, 0)
    for (const [i, body] of objects.entries()) {
      offsets.push(length())
      parts.push(Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`))
    }
    offsets.push(length())
    parts.push(Buffer.from(`4 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`), content, Buffer.from('\nendstream\nendobj\n'))
    const xref = length()
    parts.push(
      Buffer.from(
        `xref\n0 5\n0000000000 65535 f \n${
          offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')
        }trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`,
      ),
    )
    const bomb = new Uint8Array(Buffer.concat(parts))
    expect(await inflatedSize(bomb, 64 * 1024 * 1024)).toBe(8 * 1024 * 1024)
    await expect(extractPdf(bomb, { deadlineMs: 20_000, maxInflatedBytes: 4 * 1024 * 1024 })).rejects.toThrow(/expand to more than 4 MB/)
    // under the limit it is read (a page of spaces: no text)
    expect((await extractPdf(bomb, { deadlineMs: 20_000 })).pages[0]!.text).toBe('')
    // a typeset PDF's streams are counted, fonts and text, and are far below it
    const lesson = await makePdf(['Leçon 1 : les équations du premier degré à une inconnue, et leur résolution.'])
    expect(await inflatedSize(lesson)).toBeGreaterThan(100)
    expect(await inflatedSize(lesson)).toBeLessThan(MAX_INFLATED_BYTES / 100)
  })

  it('stops at the deadline', async () => {
    const pdf = await makePdf(Array.from({ length: 30 }, (_, i) => `Page ${i + 1}. ${'Texte de cours. '.repeat(40)}`))
    await expect(extractPdf(pdf, { deadlineMs: 1 })).rejects.toThrow(/longer than 1 ms/)
  })
})

describe('text bounds', () => {
  const page = (characters: number) =>
    rawPdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
      // lines of 1,000 characters (500 points wide at 1 point), a point apart
      stream('', `BT /F1 1 Tf 10 780 Td ${Array.from({ length: characters / 1000 }, () => `(${'abcdefghi '.repeat(100)}) Tj 0 -1 Td`).join(' ')} ET`),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ])
  it('refuses a page of more than MAX_PAGE_CHARS characters of text, which no real page holds', async () => {
    expect(MAX_PAGE_CHARS).toBe(100_000)
    expect((await extractPdf(page(90_000), { deadlineMs: 30_000 })).pages[0]!.text.length).toBeGreaterThan(80_000)
    await expect(extractPdf(page(110_000), { deadlineMs: 30_000 })).rejects.toThrow(new PdfError('page 1 has more than 100000 characters of text'))
  })
})

describe('text layers read in a worker thread (Node)', () => {
  // 2^30 drawings from 6 KB: form XObjects, 30 of them, each drawing the next twice. In the calling
  // thread pdf.js worked through the page as one chain of promises: no timer fired, the 3 s deadline was
  // not held, and the process grew to the heap limit and ended.
  const chain = (depth: number) =>
    rawPdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X 5 0 R >> >> /Contents 4 0 R >>',
      stream('', '/X Do'),
      ...Array.from({ length: depth }, (_, i) =>
        stream(
          `/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X ${i + 6} 0 R >> >>`,
          i === depth - 1 ? '0 0 m 10 10 l S' : '/X Do /X Do',
        )),
    ])

  it('reads with one bounded pool: past its readers a reading waits its turn, past its queue it is refused at once (PdfReadersBusy)', async () => {
    const reader = createIsolatedExtractor({ size: 1, maxQueue: 1 })
    try {
      // the first reading holds the one reader for seconds (a page pdf.js cannot finish, stopped at its deadline)
      const slow = reader(chain(30), { deadlineMs: 1500, imageCheckBelowChars: 200 })
      const waiting = reader(await makePdf(['Une page.']), { deadlineMs: 10_000 })
      await expect(reader(await makePdf(['Une autre page.']), { deadlineMs: 10_000 })).rejects.toBeInstanceOf(PdfReadersBusy)
      expect(reader.stats()).toEqual({ readers: 1, busy: 1, waiting: 1 })
      await expect(slow).rejects.toThrow('PDF parsing took longer than 1500 ms')
      expect((await waiting).pages[0]!.text).toBe('Une page.')
      expect(reader.stats().readers).toBeLessThanOrEqual(1)
    } finally {
      await reader.close()
    }
  }, 30_000)

  it('a document that finds both readers free is read by both, a share of its pages each, as one reader reads it', async () => {
    const pages = Array.from({ length: 7 }, (_, i) => `Page ${i + 1} : l'équation x² + ${i}x = √2, الدرس ${i + 1}.`)
    const pdf = await makePdf(pages, { arabic: true })
    const reader = createIsolatedExtractor({ size: 2 })
    try {
      const alone = await extractPdf(pdf, { deadlineMs: 10_000, imageCheckBelowChars: 200 })
      const shared = await reader(pdf, { deadlineMs: 10_000, imageCheckBelowChars: 200 })
      expect(shared).toEqual(alone)
      expect(shared.pages.map((p) => p.number)).toEqual([1, 2, 3, 4, 5, 6, 7])
      // both processes read, and both stay for the next document
      expect(reader.stats()).toEqual({ readers: 2, busy: 0, waiting: 0 })
      expect(await reader(pdf, { deadlineMs: 10_000, imageCheckBelowChars: 200 })).toEqual(alone)
    } finally {
      await reader.close()
    }
  }, 30_000)

  it('a page pdf.js cannot finish fails at the deadline, and the process goes on meanwhile', async () => {
    const reader = createIsolatedExtractor()
    let last = performance.now()
    let lag = 0
    const ticks = setInterval(() => {
      lag = Math.max(lag, performance.now() - last - 50)
      last = performance.now()
    }, 50)
    try {
      const started = performance.now()
      await expect(readPdf(chain(30), { deadlineMs: 3000, mode: 'auto', minPageChars: 50, maxOcrPages: 1, minConfidence: () => 0.7, extract: reader })).rejects
        .toThrow(
          new PdfError('PDF parsing took longer than 3000 ms'),
        )
      // bounds far from the old behaviour (minutes, with no timer firing) and wide for a busy machine
      expect(performance.now() - started).toBeLessThan(15_000)
      expect(lag).toBeLessThan(2500)
      // the next PDF is read as before, by a new thread
      const lesson = await makePdf(['Leçon 1 : les équations du premier degré à une inconnue.'])
      expect((await reader(lesson, { deadlineMs: 10_000 })).pages[0]!.text).toBe('Leçon 1 : les équations du premier degré à une inconnue.')
      await expect(reader(new TextEncoder().encode('%PDF-1.4 broken'), { deadlineMs: 10_000 })).rejects.toThrow(PdfError)
    } finally {
      clearInterval(ticks)
      await reader.close()
    }
  }, 30_000)

  it(
    'a reading whose process ends under it (as V8 ends one whose thread ran out of heap in one step) fails as unreadable, and the caller goes on',
    async () => {
      const reader = createIsolatedExtractor()
      try {
        const reading = reader(chain(30), { deadlineMs: 60_000 })
        const [host] = threadHosts()
        expect(host).toBeGreaterThan(0)
        process.kill(host!, 'SIGABRT')
        await expect(reading).rejects.toThrow(new PdfError('unreadable PDF: the reader stopped'))
        const lesson = await makePdf(['Leçon 2 : les fonctions affines.'])
        expect((await reader(lesson, { deadlineMs: 10_000 })).pages[0]!.text).toBe('Leçon 2 : les fonctions affines.')
      } finally {
        await reader.close()
      }
    },
    30_000,
  )

  it('a page that needs more memory than the thread has fails as unreadable', async () => {
    const reader = createIsolatedExtractor({ heapMb: 64 })
    try {
      await expect(reader(chain(30), { deadlineMs: 60_000, imageCheckBelowChars: 200 })).rejects.toThrow(/needs more than 64 MB of memory/)
    } finally {
      await reader.close()
    }
  }, 90_000)
})

describe('joinItems', () => {
  const run = (str: string, x: number, width: number, options: Partial<TextRun> = {}): TextRun => ({
    str,
    dir: 'ltr',
    transform: [12, 0, 0, 12, x, 700],
    width,
    height: 12,
    hasEOL: false,
    ...options,
  })
  it('joins runs that touch on a line into one word, right to left for Arabic whatever their order', () => {
    // "حركة" as "كة" (left) then "حر" (right), then a word space, then "المرابطين"
    const rtl = { dir: 'rtl' }
    expect(joinItems([run('كة', 371, 12, rtl), run('حر', 380, 11, rtl), run('المرابطين', 336, 32, rtl)])).toBe('حركة المرابطين ')
    expect(joinItems([run('حر', 380, 11, rtl), run('كة', 371, 12, rtl)])).toBe('حركة ')
  })
  it('keeps a space between runs a word space apart, and a line break after the end of a line', () => {
    expect(
      joinItems([
        run('Le', 50, 12),
        run('çon', 62.5, 18),
        run('trois', 84, 24, { hasEOL: true }),
        run('Suite', 50, 25, { transform: [12, 0, 0, 12, 50, 686] }),
      ]),
    ).toBe('Leçon trois\nSuite ')
  })
  it('puts an Arabic line drawn from its left end in reading order, numbers and Latin words left to right', () => {
    // "يقرأ 25 صفحة من كتاب Python الجديد" drawn word by word from the left (as Chromium draws a line)
    const rtl = { dir: 'rtl' }
    const drawn = [
      run('الجديد', 50, 30, rtl),
      run('Python', 85, 30),
      run('كتاب', 120, 20, rtl),
      run('من', 145, 10, rtl),
      run('صفحة', 160, 20, rtl),
      run('25', 185, 10),
      run('يقرأ', 200, 20, { ...rtl, hasEOL: true }),
    ]
    expect(joinItems(drawn)).toBe('يقرأ 25 صفحة من كتاب Python الجديد\n')
    // the same words drawn from the right end are left as they come
    expect(joinItems([...drawn].reverse().map((r, i) => ({ ...r, hasEOL: i === drawn.length - 1 })))).toBe('يقرأ 25 صفحة من كتاب Python الجديد\n')
    // a French line is never turned round
    expect(joinItems([run('Le', 50, 12), run('cours', 70, 25), run('de', 100, 10), run('maths', 115, 25)])).toBe('Le cours de maths ')
  })

  it('puts an Arabic line whose pieces come out of order in reading order, presentation forms as well', () => {
    // a justified line broken at its number, the pieces in the content stream's order (LibreOffice)
    const rtl = { dir: 'rtl' }
    const pieces = [
      run('فالطالب الذي يقرأ', 400, 80, rtl),
      run('25', 380, 15),
      run('كبيرة.', 211, 30, rtl),
      run('كل أسبوع يتقدّم بسرعة', 245, 100, rtl),
      run('صفحة', 349, 28, { ...rtl, hasEOL: true }),
    ]
    expect(joinItems(pieces)).toBe('فالطالب الذي يقرأ 25 صفحة كل أسبوع يتقدّم بسرعة كبيرة.\n')
    // run by run from the left end around a Latin word, in presentation forms (XeLaTeX): "نستعمل برنامج Python لحساب المعدل"
    const xelatex = [run('ﻟﺤﺴﺎﺏ ﺍﻟﻤﻌﺪﻝ', 134, 200, rtl), run('Python', 342, 32), run('ﻧﺴﺘﻌﻤﻞ ﺑﺮﻧﺎﻣﺞ', 376, 100, { ...rtl, hasEOL: true })]
    expect(joinItems(xelatex).normalize('NFKC')).toBe('نستعمل برنامج Python لحساب المعدل\n')
  })

  it('puts a mark drawn apart from its letter back on it, and takes no word space where there is none', () => {
    // Chromium draws "يتعلّم القراءة" glyph by glyph from the left end, the shadda before its lam and a
    // little left of it, and pdf.js adds a space of no width where the mark moved the pen back
    const rtl = { dir: 'rtl' }
    const line = [
      run('ﺓ', 30, 7, rtl),
      run('ﺀ', 37, 6, rtl),
      run('ﺍ', 43, 4, rtl),
      run('ﺮ', 47, 7, rtl),
      run('ﻘ', 54, 7, rtl),
      run('ﻟ', 61, 4, rtl),
      run('ﺍ', 65, 4, rtl),
      run(' ', 69, 6),
      run('ﻢ', 75, 9, rtl),
      run('\u0651', 83.8, 0, { transform: [12, 0, 0, 12, 83.8, 703] }),
      run(' ', 84, 0),
      run('ﻠ', 84, 5, rtl),
      run('ﻌ', 89, 7, rtl),
      run('ﺘ', 96, 4, rtl),
      run('ﻳ', 100, 4, { ...rtl, hasEOL: true }),
    ]
    expect(joinItems(line).normalize('NFKC')).toBe('يتعلّم القراءة\n')
  })

  it("reads runs drawn with a mirrored text matrix (tesseract's invisible text over a scan) in reading order", () => {
    // ocrmypdf writes each right-to-left word with the matrix -1 0 0 1, its characters in reading order;
    // pdf.js turns them round, places each run from its right end and ends a line after some of them
    const rtl = { dir: 'rtl' }
    const at = (x: number, y = 700) => ({ transform: [-12, 0, 0, 12, x, y] })
    const line = [
      run('سردلا', 0, 30, { ...rtl, ...at(500), hasEOL: true }),
      run(' ', 0, 4, at(470)),
      run('ناك :نماثلا', 0, 60, { ...rtl, ...at(466), hasEOL: true }),
      run('.امارغ 85', 0, 50, { ...rtl, ...at(402) }),
      run('يناثلا', 0, 30, { ...rtl, ...at(500, 680), hasEOL: false }),
      run('سردلا', 0, 30, { ...rtl, ...at(466, 680) }),
    ]
    expect(joinItems(line).replace(/ +/g, ' ')).toBe('الدرس الثامن: كان 85 غراما.\nالثاني الدرس ')
    // the same words drawn as typesetters draw them are read as before
    expect(joinItems([run('الدرس', 470, 30, rtl), run('الثامن', 430, 30, rtl)])).toBe('الدرس الثامن ')
  })

  it('never joins runs on different lines, or a run that is only a space', () => {
    expect(joinItems([run('fin', 50, 15), run('début', 65, 25, { transform: [12, 0, 0, 12, 65, 686] })])).toBe('fin début ')
    expect(joinItems([run('a', 50, 6), run(' ', 56, 3), run('b', 59, 6)])).toBe('a   b ')
  })
})
