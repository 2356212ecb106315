// A scan laid askew is put straight before it is recognized (scripts/lib/deskew.ts): the angle is found
// from the page image, and the rendering given to the recognizer is turned back.
import { describe, expect, it } from 'vitest'
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { createCanvas, loadImage } from '@napi-rs/canvas'
import { makeScannedPdf } from '../scripts/lib/pdf.ts'
import { renderPage } from '../scripts/lib/render-page.ts'
import { MIN_SKEW, skewAngle } from '../scripts/lib/deskew.ts'
import { SCAN_AR, SCAN_FR } from './helpers/scans.ts'

async function angleOf(png: Buffer): Promise<number> {
  const image = await loadImage(png)
  const canvas = createCanvas(image.width, image.height)
  canvas.getContext('2d').drawImage(image, 0, 0)
  return skewAngle(canvas.getContext('2d').getImageData(0, 0, image.width, image.height).data, image.width, image.height)
}

async function render(pdf: Uint8Array, straighten: boolean): Promise<{ png: Buffer; found: number | null }> {
  const task = getDocument({ data: pdf.slice(), verbosity: 0 })
  try {
    let found: number | null = null
    const png = await renderPage(await task.promise, 1, 150, { straighten, onSkew: (a) => void (found = a) })
    return { png, found }
  } finally {
    await task.destroy()
  }
}

describe('straightening a scan laid askew', () => {
  it('finds the angle a French or an Arabic page was turned by, either way, and 0 for a straight page', async () => {
    const cases = [[SCAN_FR[0]!, false, 0], [SCAN_FR[0]!, false, 0.7], [SCAN_FR[0]!, false, -1.5], [SCAN_AR[0]!, true, 3], [SCAN_AR[0]!, true, -0.4]] as const
    for (const [text, arabic, skew] of cases) {
      const { found } = await render(await makeScannedPdf([text], { arabic, skew }), true)
      expect(Math.abs(found! - skew), `${arabic ? 'ar' : 'fr'} ${skew}°`).toBeLessThanOrEqual(0.1)
    }
  })

  it("is not misled by a scanner's dark edges or a rule across the page", async () => {
    const { png } = await render(await makeScannedPdf([SCAN_FR[0]!], { skew: 1.2 }), false)
    const image = await loadImage(png)
    const canvas = createCanvas(image.width, image.height)
    const g = canvas.getContext('2d')
    g.drawImage(image, 0, 0)
    g.fillStyle = '#222'
    g.fillRect(0, 0, 40, image.height) // the lid's shadow on the left
    g.fillRect(0, image.height - 30, image.width, 30) // and at the foot
    g.fillRect(0, Math.round(image.height * 0.5), image.width, 3) // a rule drawn straight
    expect(Math.abs(skewAngle(g.getImageData(0, 0, image.width, image.height).data, image.width, image.height) - 1.2)).toBeLessThanOrEqual(0.1)
  })

  it('gives the recognizer the page turned straight', async () => {
    const askew = await makeScannedPdf([SCAN_FR[1]!], { skew: 2 })
    expect(Math.abs(await angleOf((await render(askew, false)).png))).toBeGreaterThan(1.9)
    expect(Math.abs(await angleOf((await render(askew, true)).png))).toBeLessThan(MIN_SKEW)
  })
})
