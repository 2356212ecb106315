// Verified text layers and the recognizer: the readability check on clean and damaged text, scanned
// French and Arabic pages read by tesseract.js from pdf.js renderings (no network: traineddata from
// node_modules), the better reading kept, deadlines, the page cap and the readings kept for a while.
import { readFileSync } from 'node:fs'
import { deflateSync } from 'node:zlib'
import { availableParallelism } from 'node:os'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { readability } from '../functions-shared/text/readability.ts'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { type OcrEngine, ocrLanguagesFor, pagesNeedingOcr, readPdf, type ReadPdfOptions, separateRunOnWords } from '../functions-shared/pdf/read.ts'
import { createNodeOcr, defaultOcrConcurrency } from '../scripts/lib/ocr.ts'
import { createPageRenderer } from '../scripts/lib/render-isolate.ts'
import { createIsolatedExtractor } from '../scripts/lib/pdf-isolate.ts'
import { makePdf, makeScannedPdf } from '../scripts/lib/pdf.ts'
import { characterErrorRate, reverseLamAlef, SCAN_AR, SCAN_FR, splitWords } from './helpers/scans.ts'
import { rawPdf, streamObject, type3Storm } from './helpers/raw-pdf.ts'
import { alive, threadHost } from './helpers/hosts.ts'

const CLEAN_AR =
  'تعد الزكاة الركن الثالث من أركان الإسلام، وهي حق معلوم في أموال الأغنياء يعطى للفقراء والمساكين. وتجب الزكاة في الذهب والفضة والأنعام والزروع إذا بلغت النصاب. ومن حكمها تطهير النفس من البخل وتحقيق التكافل بين أفراد المجتمع.'
const CLEAN_FR =
  "Le mouvement d'un solide est décrit dans un référentiel : on choisit un repère d'espace et une origine des dates. La vitesse moyenne est le quotient de la distance parcourue par la durée du parcours ; elle s'exprime en mètres par seconde."

describe('readability', () => {
  it('passes clean French and Arabic, and Arabic whose lines came out reversed (the order is repaired first)', () => {
    expect(readability(CLEAN_FR)).toMatchObject({ readable: true, score: 0 })
    expect(readability(CLEAN_AR)).toMatchObject({ readable: true, score: 0 })
    const reversedLine = Array.from(CLEAN_AR).reverse().join('')
    expect(readability(reversedLine).readable).toBe(true)
  })

  it('fails reversed lam-alef, words split inside, unmapped glyphs and French encoding garbage', () => {
    const lamAlef = readability(reverseLamAlef(CLEAN_AR))
    expect(lamAlef.readable).toBe(false)
    expect(lamAlef.problems.reversedLamAlef).toBeGreaterThanOrEqual(3)
    const split = readability(splitWords(CLEAN_AR))
    expect(split.readable).toBe(false)
    expect(split.problems.brokenWords).toBeGreaterThanOrEqual(3)
    const unmapped = readability(CLEAN_AR.replace(/[.،]/g, '\u0000'))
    expect(unmapped.readable).toBe(false)
    expect(unmapped.problems.unmapped).toBeGreaterThanOrEqual(3)
    const mojibake = readability(Buffer.from(CLEAN_FR, 'utf8').toString('latin1'))
    expect(mojibake.readable).toBe(false)
    expect(mojibake.problems.mojibake).toBeGreaterThanOrEqual(3)
    // the score orders readings: the damaged one is worse
    expect(lamAlef.score).toBeGreaterThan(readability(CLEAN_AR).score)
  })

  it('takes one odd word for a name or a typo, not a broken layer', () => {
    expect(readability(`${CLEAN_AR} و`).readable).toBe(true)
    expect(readability(`${CLEAN_FR} Ã©`).readable).toBe(true)
  })
})

describe('separateRunOnWords', () => {
  it('puts back a space the recognizer missed after a word-final taa marbuta or alef maqsura, and nothing else', () => {
    expect(separateRunOnWords('الزوارق الصغيرةقرب الشاطئ، وعلىكل صياد')).toBe('الزوارق الصغيرة قرب الشاطئ، وعلى كل صياد')
    for (const kept of ['مدرستي عليه', 'مدرسةٌ كبيرة', 'فيالعالم', 'parles impôts']) expect(separateRunOnWords(kept)).toBe(kept)
  })
})

describe('pagesNeedingOcr', () => {
  const pages = [
    { number: 1, text: CLEAN_FR },
    { number: 2, text: '3', images: true },
    { number: 3, text: 'Sommaire', images: false },
    { number: 4, text: reverseLamAlef(CLEAN_AR) },
  ]
  it('auto: pages that paint an image with too little text, and unreadable layers; always: all; never: none', () => {
    expect(pagesNeedingOcr(pages, 'auto', 50)).toEqual([2, 4])
    expect(pagesNeedingOcr(pages, 'always', 50)).toEqual([1, 2, 3, 4])
    expect(pagesNeedingOcr(pages, 'never', 50)).toEqual([])
  })
  it('reads Arabic and Hassaniya with the Arabic model, French with the French one, both when unknown', () => {
    expect(ocrLanguagesFor('fr')).toEqual(['fra'])
    expect(ocrLanguagesFor('ar')).toEqual(['ara'])
    expect(ocrLanguagesFor('hassaniya')).toEqual(['ara'])
    expect(ocrLanguagesFor(null)).toEqual(['ara', 'fra'])
  })
})

describe('the recognizer on scanned and damaged PDFs', () => {
  let engine: OcrEngine
  let recognized = 0
  let scanFr: Uint8Array
  let scanAr: Uint8Array
  const options = (over: Partial<ReadPdfOptions> = {}): ReadPdfOptions => ({
    deadlineMs: 60_000,
    mode: 'auto',
    engine,
    minPageChars: 50,
    maxOcrPages: 100,
    minConfidence: (l) => (l === 'fr' ? 0.8 : 0.7),
    ...over,
  })

  beforeAll(async () => {
    engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0, onPage: () => void recognized++ })
    scanFr = await makeScannedPdf(SCAN_FR)
    scanAr = await makeScannedPdf(SCAN_AR, { arabic: true })
  })
  afterAll(async () => engine?.close())

  it("reads a scanned French lesson page by page, with the recognizer's confidence, and reports progress", async () => {
    const progress: string[] = []
    const read = await readPdf(scanFr, options({ language: 'fr', onProgress: ({ done, total }) => void progress.push(`${done}/${total}`) }))
    expect(read.pageCount).toBe(2)
    expect(read.pages.map((p) => p.source)).toEqual(['ocr', 'ocr'])
    expect(progress).toEqual(['0/2', '1/2', '2/2'])
    expect(read.ocr).toMatchObject({ pages: 2, attempted: 2, failed: 0, skipped: 0 })
    expect(read.ocr.confidence).toBeGreaterThan(0.8)
    for (const [i, page] of read.pages.entries()) {
      expect(page.number).toBe(i + 1)
      expect(characterErrorRate(canonicalize(SCAN_FR[i]!), canonicalize(page.text))).toBeLessThan(0.03)
    }
    expect(canonicalize(read.pages[1]!.text)).toContain('mitochondries')
  })

  it('reads a page scanned askew as well as a straight one: the rendering is turned straight first', async () => {
    for (const [text, arabic, skew] of [[SCAN_FR[1]!, false, 2], [SCAN_AR[1]!, true, -1.5]] as const) {
      const read = await readPdf(await makeScannedPdf([text], { arabic, skew }), options({ language: arabic ? 'ar' : 'fr' }))
      expect(read.pages[0]!.source).toBe('ocr')
      expect(characterErrorRate(canonicalize(text), canonicalize(read.pages[0]!.text)), `${skew}°`).toBeLessThan(arabic ? 0.08 : 0.03)
    }
  })

  it('reads a scanned Arabic lesson in logical order, hamzas included', async () => {
    const read = await readPdf(scanAr, options({ language: 'ar' }))
    expect(read.pages.map((p) => p.source)).toEqual(['ocr', 'ocr'])
    expect(read.ocr.confidence).toBeGreaterThan(0.7)
    for (const [i, page] of read.pages.entries()) expect(characterErrorRate(canonicalize(SCAN_AR[i]!), canonicalize(page.text))).toBeLessThan(0.08)
    const text = canonicalize(read.pages.map((p) => p.text).join(' '))
    // hamza forms as written (a recognizer may miss a letter here and there: most, not all)
    const hamzaWords = ['الأطلسي', 'الأرز', 'الأراضي', 'أقيمت', 'مياه', 'السنغال', 'الفيضان', 'الشمال']
    expect(hamzaWords.filter((w) => text.includes(w)).length).toBeGreaterThanOrEqual(6)
    expect(text).toMatch(/[أإآ]/)
  })

  it('reads a document of unknown language with the one model its first page shows (one page read with both first)', async () => {
    const scan = await makeScannedPdf(SCAN_AR.slice(1), { arabic: true })
    const before = recognized
    const read = await readPdf(scan, options({ language: null }))
    expect(recognized - before).toBe(2) // the probe, then the page with the Arabic model alone
    expect(characterErrorRate(canonicalize(SCAN_AR[1]!), canonicalize(read.pages[0]!.text))).toBeLessThan(0.08)
  })

  it('keeps the readings of a file for a while: a second read recognizes nothing again', async () => {
    const before = recognized
    const read = await readPdf(scanFr, options({ language: 'fr' }))
    expect(read.ocr.pages).toBe(2)
    expect(recognized).toBe(before)
  })

  it('recognizes a page whose text layer is broken and keeps the better reading; never keeps the layer', async () => {
    for (const damage of [reverseLamAlef, splitWords]) {
      const pdf = await makeScannedPdf(SCAN_AR.slice(0, 1), { arabic: true, layer: [damage(SCAN_AR[0]!)] })
      const auto = await readPdf(pdf, options({ language: 'ar' }))
      expect(auto.pages[0]!.source).toBe('ocr')
      // the reading kept is one that passes the check, and is near the source
      expect(readability(auto.pages[0]!.text).readable).toBe(true)
      expect(characterErrorRate(canonicalize(SCAN_AR[0]!), canonicalize(auto.pages[0]!.text))).toBeLessThan(0.08)
      const never = await readPdf(pdf, options({ language: 'ar', mode: 'never' }))
      expect(readability(never.pages[0]!.text).readable).toBe(false)
      expect(readability(auto.pages[0]!.text).score).toBeLessThan(readability(never.pages[0]!.text).score)
      expect(never.pages[0]).toMatchObject({ source: 'pdf', confidence: null })
      expect(never.ocr.attempted).toBe(0)
    }
  })

  it("puts right a layer that reads lam-alef backwards by the recognizer's reading, keeping its letters and marks", async () => {
    // LibreOffice with Noto Sans Arabic (test/fixtures/typeset): "اإلسالم" for "الإسلام", "التالميذ" for "التلاميذ"
    const pdf = new Uint8Array(readFileSync(new URL('./fixtures/typeset/libreoffice-notosansarabic.pdf', import.meta.url)))
    const source = readFileSync(new URL('./fixtures/typeset/ar.txt', import.meta.url), 'utf8')
    const words = (text: string) => text.normalize('NFKC').match(/[\p{L}\p{M}\p{N}]+/gu) ?? []
    const kept = (text: string) => {
      const got = new Set(words(canonicalize(text)))
      return words(source).filter((w) => got.has(w)).length / words(source).length
    }
    const never = await readPdf(pdf, options({ language: 'ar', mode: 'never' }))
    expect(readability(never.pages[0]!.text).problems.reversedLamAlef).toBeGreaterThan(0)
    expect(kept(never.pages[0]!.text)).toBeLessThan(0.95)
    const auto = await readPdf(pdf, options({ language: 'ar' }))
    expect(auto.ocr.repaired).toBe(1)
    expect(auto.pages[0]).toMatchObject({ source: 'pdf', confidence: null })
    expect(readability(auto.pages[0]!.text).readable).toBe(true)
    expect(kept(auto.pages[0]!.text)).toBe(1) // every word as written, harakat included
    expect(canonicalize(auto.pages[0]!.text)).toContain('الإسلام')
  })

  it("puts right a layer that reads lam-alef backwards only after a joining letter, and the name of God backwards, by the recognizer's reading", async () => {
    // LibreOffice with Noto Kufi Arabic (test/fixtures/typeset): "الإسالم", "التالميذ" and "هللا", the lone لا
    // and على right; the words' shapes pass the check, the name read backwards on a page that reads no
    // joined lam-alef right does not
    const pdf = new Uint8Array(readFileSync(new URL('./fixtures/typeset/libreoffice-notokufiarabic.pdf', import.meta.url)))
    const source = readFileSync(new URL('./fixtures/typeset/ar.txt', import.meta.url), 'utf8')
    const words = (text: string) => text.normalize('NFKC').match(/[\p{L}\p{M}\p{N}]+/gu) ?? []
    const kept = (text: string) => {
      const got = new Set(words(canonicalize(text)))
      return words(source).filter((w) => got.has(w)).length / words(source).length
    }
    const never = await readPdf(pdf, options({ language: 'ar', mode: 'never' }))
    expect(readability(never.pages[0]!.text).readable).toBe(false)
    expect(kept(never.pages[0]!.text)).toBeCloseTo(62 / 65, 6)
    expect(canonicalize(never.pages[0]!.text)).toContain('شاء هللا')
    const auto = await readPdf(pdf, options({ language: 'ar' }))
    expect(auto.ocr.repaired).toBe(1)
    expect(auto.pages[0]).toMatchObject({ source: 'pdf', confidence: null })
    expect(readability(auto.pages[0]!.text).readable).toBe(true)
    expect(kept(auto.pages[0]!.text)).toBe(1) // every word as written, harakat included
    for (const w of ['مَبادئ الإسلام', 'يتعلّم التلاميذ', 'إن شاء الله']) expect(canonicalize(auto.pages[0]!.text)).toContain(w)
  })

  it('leaves a readable text layer alone in auto mode, and replaces it with a confident reading in always mode', async () => {
    const pdf = await makePdf(SCAN_AR.slice(0, 1), { arabic: true, rtl: true })
    const auto = await readPdf(pdf, options({ language: 'ar' }))
    expect(auto.ocr.attempted).toBe(0)
    expect(canonicalize(auto.pages[0]!.text)).toBe(canonicalize(SCAN_AR[0]!))
    const always = await readPdf(pdf, options({ language: 'ar', mode: 'always' }))
    expect(always.ocr.attempted).toBe(1)
    expect(always.pages[0]!.source).toBe('ocr')
  })

  it('without a recognizer, names the pages that need one', async () => {
    const read = await readPdf(scanFr, options({ engine: undefined, language: 'fr' }))
    expect(read.needsOcr).toEqual([1, 2])
    expect(read.pages.every((p) => p.source === 'pdf')).toBe(true)
  })

  it('recognizes at most OCR_MAX_PAGES pages of a document', async () => {
    const read = await readPdf(scanFr, options({ language: 'fr', maxOcrPages: 1 }))
    expect(read.ocr).toMatchObject({ attempted: 1, skipped: 1, pages: 1 })
    expect(read.pages.map((p) => p.source)).toEqual(['ocr', 'pdf'])
  })

  it('gives up a page whose drawing outlasts its deadline: the drawing thread is stopped, not waited for', async () => {
    // a Type3 glyph of 2,000 strokes shown 60,000 times (60 KB): its drawing took 11 s for 20,000 shows,
    // run to its end whatever the page's deadline
    const storm = type3Storm(60_000, 2_000)
    // the deadlines are kept by a clock the test moves (this process's timers and performance.now()), so
    // however loaded the machine: the storm's 12 s are spent once its drawing has begun, and the next
    // document's page spends none of its own
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const drawers: (number | undefined)[] = []
    let drawing = () => {}
    const begun = new Promise<void>((resolve) => (drawing = resolve))
    // (its threads and recognizer kept warm between documents, as a server keeps them)
    const hasty = createNodeOcr({
      concurrency: 1,
      dpi: 200,
      pageDeadlineMs: 12_000,
      idleMs: 60_000,
      onDrawer: (pid) => void drawers.push(pid),
      onDrawing: () => drawing(),
    })
    try {
      const reading = hasty.recognize(storm, [1], ['fra'])
      await begun
      await vi.advanceTimersByTimeAsync(12_000)
      expect(await reading).toEqual([{ number: 1, error: 'recognition took longer than 12000 ms' }])
      // its drawing thread was stopped: its process has ended, not left to draw for the 33 s it takes
      expect(drawers).toHaveLength(1)
      expect(alive(drawers[0])).toBe(false)
      // the recognizer was not the late one: it reads the next document, drawn by a new thread
      expect((await hasty.recognize(scanFr, [1], ['fra']))[0]).toMatchObject({ number: 1, text: expect.stringMatching(/\S/) })
      expect(drawers).toHaveLength(2)
    } finally {
      vi.useRealTimers()
      await hasty.close()
    }
  })

  it('reads a scan whose page image is JPEG 2000, from a Node Buffer, through the worker threads a Node process reads with', async () => {
    // test/fixtures/jpx: a French page rendered at 150 dpi and compressed by OpenJPEG's opj_compress (-r 40),
    // painted as one JPXDecode image. Without pdf.js's WebAssembly decoders the image was not decoded and
    // the page read as blank; and a Buffer (what readFileSync gives) was taken from its caller by the
    // text layer's thread, so the recognizer then found it detached.
    const bytes = readFileSync(new URL('./fixtures/jpx/photosynthese-fr.pdf', import.meta.url))
    const extract = createIsolatedExtractor()
    try {
      const read = await readPdf(bytes, options({ language: 'fr', extract }))
      expect(read.pages[0]).toMatchObject({ source: 'ocr' })
      expect(read.pages[0]!.text).toContain('la photosynthèse. Les plantes vertes fabriquent leur matière organique')
    } finally {
      await extract.close()
    }
  })

  it('reads a page scanned upside down or sideways: a reading it doubts is read again turned', async () => {
    // upside down, the French page read as noise at 0.42 (CER 0.79) and the Arabic one at 0.33
    for (const [pages, language, turn] of [[SCAN_FR, 'fr', 180], [SCAN_AR, 'ar', 90], [SCAN_FR, 'fr', 270]] as const) {
      const read = await readPdf(await makeScannedPdf([pages[0]!], { arabic: language === 'ar', turn }), options({ language }))
      expect(read.pages[0], `${language} ${turn}`).toMatchObject({ source: 'ocr' })
      expect(characterErrorRate(canonicalize(pages[0]!), canonicalize(read.pages[0]!.text)), `${language} ${turn}`).toBeLessThan(0.1)
      expect(read.ocr.confidence, `${language} ${turn}`).toBeGreaterThan(language === 'fr' ? 0.8 : 0.7)
    }
  })

  it('reads scans whose page images are CCITT Group 4, black and white as office scanners write them, in French and Arabic', async () => {
    // test/fixtures/ccitt: a page of SCAN_FR and of SCAN_AR at 200 dpi, Group 4 compressed by ImageMagick
    // and put in a PDF by tiff2pdf (CCITTFaxDecode, K -1)
    const extract = createIsolatedExtractor()
    try {
      for (const [file, language, want] of [['photosynthese-fr.pdf', 'fr', SCAN_FR[0]!], ['fleuve-ar.pdf', 'ar', SCAN_AR[0]!]] as const) {
        const read = await readPdf(readFileSync(new URL(`./fixtures/ccitt/${file}`, import.meta.url)), options({ language, extract }))
        expect(read.pages[0], file).toMatchObject({ source: 'ocr' })
        expect(characterErrorRate(canonicalize(want), canonicalize(read.pages[0]!.text)), file).toBeLessThan(0.08)
      }
    } finally {
      await extract.close()
    }
  })

  it('a page whose drawing needs more memory than its thread has fails, and the process goes on', async () => {
    // form XObjects, 30 of them, each drawing the next twice: 2^30 drawings from 6 KB, whose operator
    // list grew the drawing thread to 4.2 GB in the 60 s of a deadline before its heap was bounded
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X 5 0 R >> >> /Contents 4 0 R >>',
      '<< /Length 5 >>\nstream\n/X Do\nendstream',
      ...Array.from({ length: 30 }, (_, i) => {
        const data = i === 29 ? '0 0 m 10 10 l S' : '/X Do /X Do'
        return `<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X ${
          i + 6
        } 0 R >> >> /Length ${data.length} >>\nstream\n${data}\nendstream`
      }),
    ]
    const renderer = createPageRenderer(rawPdf(objects), { heapMb: 64 })
    try {
      await expect(renderer.render(1, 200, performance.now() + 30_000)).rejects.toThrow('drawing the page needs more than 64 MB of memory')
    } finally {
      await renderer.close()
    }
  }, 60_000)

  it('a page whose images need more memory outside its heap than its thread may hold fails, and the next page is drawn', async () => {
    // pdf.js keeps each image a page paints decoded until the page is done, in typed arrays the heap's
    // bound does not count: 40 images of 4,000 by 4,000 pixels (1.9 MB of PDF) grew the process to 8.7 GB
    const image = deflateSync(Buffer.alloc(2000 * 2000 * 3, 255)).toString('hex')
    const count = 8
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>',
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << ${
        Array.from({ length: count }, (_, i) => `/I${i} ${i + 7} 0 R`).join(' ')
      } >> >> /Contents 4 0 R >>`,
      streamObject(Array.from({ length: count }, (_, i) => `q 612 0 0 792 0 0 cm /I${i} Do Q`).join('\n')),
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 6 0 R >>',
      streamObject('0 0 m 100 100 l S'),
      ...Array.from(
        { length: count },
        () =>
          `<< /Type /XObject /Subtype /Image /Width 2000 /Height 2000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter [/ASCIIHexDecode /FlateDecode] /Length ${
            image.length + 1
          } >>\nstream\n${image}>\nendstream`,
      ),
    ]
    const renderer = createPageRenderer(rawPdf(objects), { externalMb: 64 })
    try {
      await expect(renderer.render(1, 72, performance.now() + 30_000)).rejects.toThrow('drawing the page needs more than 64 MB of memory outside its heap')
      expect((await renderer.render(2, 72, performance.now() + 30_000)).image.length).toBeGreaterThan(0)
    } finally {
      await renderer.close()
    }
  }, 60_000)

  it('a page whose drawing needs more canvases than its thread may hold fails, and the next page is drawn', async () => {
    // each form a transparency group of the page's size, drawing the next: pdf.js holds a canvas per
    // level, memory of the canvas library that no bound of the thread counts (40 deep: 17 GB)
    const depth = 40
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X 7 0 R >> >> /Contents 4 0 R >>',
      streamObject('/X Do'),
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 6 0 R >>',
      streamObject('0 0 m 100 100 l S'),
      ...Array.from({ length: depth }, (_, i) => {
        const data = i === depth - 1 ? '0 0 m 612 792 l S' : '0 0 m 10 10 l S /X Do'
        return `<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Group << /S /Transparency /I true /K true >> /Resources << /XObject << /X ${
          i + 8
        } 0 R >> >> /Length ${data.length} >>\nstream\n${data}\nendstream`
      }),
    ]
    const renderer = createPageRenderer(rawPdf(objects), { canvasMb: 16 })
    try {
      await expect(renderer.render(1, 72, performance.now() + 30_000)).rejects.toThrow('drawing the page needs more than 16 MB of canvases')
      expect((await renderer.render(2, 72, performance.now() + 30_000)).image.length).toBeGreaterThan(0)
    } finally {
      await renderer.close()
    }
  }, 60_000)

  it('a drawing whose process ends under it (as V8 ends one whose thread ran out of heap in one step) fails that page, and the next page is drawn', async () => {
    // page 1 draws for seconds (a Type3 glyph of 2,000 strokes shown 20,000 times), page 2 at once
    const renderer = createPageRenderer(type3Storm(20_000, 2_000, true))
    try {
      const drawing = renderer.render(1, 200, performance.now() + 30_000)
      const host = await threadHost()
      expect(host).toBeGreaterThan(0)
      process.kill(host!, 'SIGABRT')
      await expect(drawing).rejects.toThrow('the page renderer stopped')
      expect((await renderer.render(2, 72, performance.now() + 30_000)).image.length).toBeGreaterThan(0)
    } finally {
      await renderer.close()
    }
  })

  it('recognizes in a child process: one that dies under a page fails that page, and a new one reads the next', async () => {
    const pids: (number | undefined)[] = []
    const fragile = createNodeOcr({
      concurrency: 1,
      dpi: 200,
      pageDeadlineMs: 60_000,
      idleMs: 0,
      // the first recognizer is killed as it starts (kill -9), before it has read anything
      onRecognizer: (pid) => {
        pids.push(pid)
        if (pids.length === 1) process.kill(pid!, 'SIGKILL')
      },
    })
    try {
      const [first, second] = await fragile.recognize(scanFr, [1, 2], ['fra'])
      expect(first).toEqual({ number: 1, error: 'recognition failed: the recognizer stopped' })
      expect(second).toMatchObject({ number: 2 })
      expect(characterErrorRate(SCAN_FR[1]!, (second as { text: string }).text)).toBeLessThan(0.05)
      expect(pids).toHaveLength(2)
      for (const pid of pids) expect(pid).not.toBe(process.pid)
      expect(new Set(pids).size).toBe(2)
    } finally {
      await fragile.close()
    }
  })

  it('spreads the pages of one document over the pool: as many recognizers at once as it is given', async () => {
    // the default: every core but one, at least one; OCR_CONCURRENCY overrides it
    expect(defaultOcrConcurrency(0)).toBe(Math.max(1, availableParallelism() - 1))
    expect(defaultOcrConcurrency(3)).toBe(3)
    const pids: (number | undefined)[] = []
    const pool = createNodeOcr({ concurrency: 2, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0, onRecognizer: (pid) => void pids.push(pid) })
    try {
      // the second page is taken by a second recognizer while the first reads the first page
      const readings = await pool.recognize(scanFr, [1, 2], ['fra'])
      expect(new Set(pids).size).toBe(2)
      for (const [i, reading] of readings.entries()) {
        expect(characterErrorRate(canonicalize(SCAN_FR[i]!), canonicalize((reading as { text: string }).text))).toBeLessThan(0.03)
      }
    } finally {
      await pool.close()
    }
  })

  it('gives up a page past its deadline, stops that recognizer and goes on with a new one', async () => {
    const hasty = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 1, idleMs: 0 })
    try {
      const readings = await hasty.recognize(scanFr, [1, 2], ['fra'])
      expect(readings).toEqual([
        { number: 1, error: 'recognition took longer than 1 ms' },
        { number: 2, error: 'recognition took longer than 1 ms' },
      ])
      const read = await readPdf(scanFr, options({ engine: hasty, language: 'fr' }))
      expect(read.ocr).toMatchObject({ attempted: 2, failed: 2, pages: 0 })
    } finally {
      await hasty.close()
    }
  })
})
