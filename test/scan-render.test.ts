// A page set in one of the fourteen standard fonts (not embedded, as pdfkit's Helvetica is) renders with
// its letters in a process where nothing else has used pdf.js yet: the renderer is given pdf.js's
// standard font data. Without it the page rendered as empty boxes, so a French scan made from it (the
// demo's, the tests') carried no words, and the recognizer read "0000 M00".
import { afterAll, expect, it } from 'vitest'
import { canonicalize } from '../functions-shared/text/canonicalize.ts'
import { createNodeOcr } from '../scripts/lib/ocr.ts'
import { makeScannedPdf } from '../scripts/lib/pdf.ts'
import { characterErrorRate, SCAN_FR } from './helpers/scans.ts'

const engine = createNodeOcr({ concurrency: 1, dpi: 200, pageDeadlineMs: 60_000, idleMs: 0 })
afterAll(() => engine.close())

it('renders a French page set in a standard font with its letters, so its scan is read back', async () => {
  const scan = await makeScannedPdf([SCAN_FR[0]!])
  const [reading] = await engine.recognize(scan, [1], ['fra'])
  if (!reading || 'error' in reading) throw new Error(`not recognized: ${JSON.stringify(reading)}`)
  expect(characterErrorRate(canonicalize(SCAN_FR[0]!), canonicalize(reading.text))).toBeLessThan(0.05)
  expect(reading.confidence).toBeGreaterThan(0.8)
})
