// The recognizer's drawing threads kept warm between documents: one thread draws the pages of one
// document after another, a thread that dies while idle or under a page is replaced, none outlives the
// recognizer's close (or, with OCR_IDLE_MS 0, its document), and pages are drawn while the recognizer
// reads the ones before them; a page's deadline counts its own drawing and reading, not its waits. Real
// scans through pdf.js and tesseract.js.
import { execFile } from 'node:child_process'
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { createNodeOcr } from '../scripts/lib/ocr.ts'
import { createRenderPool } from '../scripts/lib/render-isolate.ts'
import { makeScannedPdf } from '../scripts/lib/pdf.ts'
import { characterErrorRate, SCAN_AR, SCAN_FR } from './helpers/scans.ts'
import { type3Storm } from './helpers/raw-pdf.ts'
import { alive, threadHosts } from './helpers/hosts.ts'

const root = new URL('..', import.meta.url).pathname
const text = (r: unknown) => (r as { text?: string }).text ?? ''
const cer = (reference: string, reading: unknown) => characterErrorRate(canonicalize(reference), canonicalize(text(reading)))

/** Waits (every 20 ms, 10 s at most) for `done`. */
async function until(done: () => boolean): Promise<boolean> {
  const end = performance.now() + 10_000
  while (!done() && performance.now() < end) await new Promise((r) => setTimeout(r, 20))
  return done()
}

describe('the drawing threads of the recognizer, kept warm between documents', () => {
  let scanFr: Uint8Array
  let scanAr: Uint8Array
  beforeAll(async () => {
    scanFr = await makeScannedPdf(SCAN_FR)
    scanAr = await makeScannedPdf(SCAN_AR, { arabic: true })
  })
  afterEach(async () => {
    // nothing a test started is left running
    expect(await until(() => threadHosts().length === 0)).toBe(true)
  })

  it('draws the pages of one document after another in the same thread, read as well as by a thread each', async () => {
    const drawers: (number | undefined)[] = []
    const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 60_000, onDrawer: (pid) => void drawers.push(pid) })
    try {
      const fr = await engine.recognize(scanFr, [1, 2], ['fra'])
      const ar = await engine.recognize(scanAr, [1, 2], ['ara'])
      expect(drawers).toHaveLength(1)
      // kept for the next document, idle
      expect(alive(drawers[0])).toBe(true)
      for (const [i, reading] of fr.entries()) expect(cer(SCAN_FR[i]!, reading)).toBeLessThan(0.03)
      for (const [i, reading] of ar.entries()) expect(cer(SCAN_AR[i]!, reading)).toBeLessThan(0.1)
    } finally {
      await engine.close()
    }
    // close() ends the warm thread's process
    expect(await until(() => !alive(drawers[0]))).toBe(true)
  })

  it('reads the next document with a new thread when the warm one died while idle', async () => {
    const drawers: (number | undefined)[] = []
    const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 60_000, onDrawer: (pid) => void drawers.push(pid) })
    try {
      expect(cer(SCAN_FR[0]!, (await engine.recognize(scanFr, [1], ['fra']))[0])).toBeLessThan(0.03)
      process.kill(drawers[0]!, 'SIGKILL')
      expect(await until(() => !alive(drawers[0]))).toBe(true)
      const [reading] = await engine.recognize(scanAr, [1], ['ara'])
      expect(cer(SCAN_AR[0]!, reading)).toBeLessThan(0.1)
      expect(drawers).toHaveLength(2)
    } finally {
      await engine.close()
    }
  })

  it('fails the page whose warm thread dies under it, and draws the next in a new thread', async () => {
    const pool = createRenderPool({ size: 1, idleMs: 60_000 })
    try {
      // a document is drawn and closed: the thread stays
      const first = pool.open(scanFr)
      expect((await first.render(1, 72, performance.now() + 30_000)).image.length).toBeGreaterThan(0)
      await first.close()
      const [warm] = threadHosts()
      expect(warm).toBeGreaterThan(0)
      // page 1 draws for seconds (a Type3 glyph of 2,000 strokes shown 20,000 times), page 2 at once
      const storm = pool.open(type3Storm(20_000, 2_000, true))
      const drawing = storm.render(1, 200, performance.now() + 30_000)
      await new Promise((r) => setTimeout(r, 300))
      process.kill(warm!, 'SIGKILL')
      await expect(drawing).rejects.toThrow('the page renderer stopped')
      expect((await storm.render(2, 72, performance.now() + 30_000)).image.length).toBeGreaterThan(0)
      expect(threadHosts()).not.toContain(warm)
      await storm.close()
    } finally {
      await pool.close()
    }
  })

  it('stops the threads of a pool idle for its idle time, and with none after each document', async () => {
    const pool = createRenderPool({ size: 1, idleMs: 200 })
    try {
      const renderer = pool.open(scanFr)
      await renderer.render(1, 72, performance.now() + 30_000)
      await renderer.close()
      expect(threadHosts()).toHaveLength(1)
      expect(await until(() => threadHosts().length === 0)).toBe(true)
    } finally {
      await pool.close()
    }
    const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0 })
    try {
      await engine.recognize(scanFr, [1], ['fra'])
      expect(threadHosts()).toEqual([])
    } finally {
      await engine.close()
    }
  })

  it('draws a page while the recognizer reads the one before it, and keeps each reading with its page', async () => {
    const events: string[] = []
    const engine = createNodeOcr({
      concurrency: 1,
      dpi: 200,
      pageDeadlineMs: 60_000,
      idleMs: 0,
      onDrawing: (page) => void events.push(`drawing ${page}`),
      onPage: () => void events.push('read'),
    })
    try {
      const readings = await engine.recognize(scanFr, [2, 1], ['fra'])
      // the second page's drawing began before the first page's reading was done
      expect(events).toEqual(['drawing 2', 'drawing 1', 'read', 'read'])
      expect(readings.map((r) => r.number)).toEqual([1, 2])
      for (const [i, reading] of readings.entries()) expect(cer(SCAN_FR[i]!, reading)).toBeLessThan(0.03)
    } finally {
      await engine.close()
    }
  })

  describe("a page's deadline, its own drawing and reading (a clock the test moves: this process's timers and performance.now())", () => {
    afterEach(() => void vi.useRealTimers())

    it('does not count the start of a drawing thread or of a recognizer', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
      // each takes 13 s to start (a machine loaded with other work), past the page's 12 s
      const slow = () => void vi.advanceTimersByTime(13_000)
      const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 12_000, idleMs: 0, onDrawer: slow, onRecognizer: slow })
      try {
        const [reading] = await engine.recognize(scanFr, [1], ['fra'])
        expect(cer(SCAN_FR[0]!, reading)).toBeLessThan(0.03)
      } finally {
        await engine.close()
      }
    })

    it('does not count its wait for a drawing thread busy with another document, overdue', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
      let drawing = () => {}
      const begun = new Promise<void>((resolve) => (drawing = resolve))
      const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 12_000, idleMs: 60_000, onDrawing: () => drawing() })
      try {
        // the one thread draws a page for seconds; the other document's page waits for it meanwhile
        const storm = engine.recognize(type3Storm(60_000, 2_000), [1], ['fra'])
        await begun
        const next = engine.recognize(scanFr, [1], ['fra'])
        await vi.advanceTimersByTimeAsync(12_000)
        expect(await storm).toEqual([{ number: 1, error: 'recognition took longer than 12000 ms' }])
        // 12 s waited, none of its own spent: drawn by a new thread and read
        expect(cer(SCAN_FR[0]!, (await next)[0])).toBeLessThan(0.03)
      } finally {
        await engine.close()
      }
    })
  })

  it('lets a script that closes it end, its warm threads and recognizers ended with it', async () => {
    const script = `
      import { createNodeOcr } from '${root}scripts/lib/ocr.ts'
      import { makeScannedPdf } from '${root}scripts/lib/pdf.ts'
      const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60000, idleMs: 60000 })
      const [reading] = await engine.recognize(await makeScannedPdf(['Leçon 1 : les fractions et les nombres décimaux.']), [1], ['fra'])
      await engine.close()
      console.log('closed', reading.text.includes('fractions'))`
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        `${root}node_modules/.bin/node`,
        ['--input-type=module', '-e', script],
        { cwd: root, timeout: 60_000 },
        (err, stdout) => err ? reject(err) : resolve(stdout),
      )
    )
    expect(out.trim()).toBe('closed true')
  })
})
