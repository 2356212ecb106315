// PDFs written object by object, for tests of what a hostile or odd file does to the reader.

/** A PDF of these objects (numbered from 1, the first the catalog), its cross-reference table computed. */
export function rawPdf(objects: string[]): Uint8Array {
  let out = '%PDF-1.7\n'
  const offsets: number[] = []
  objects.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(out)
}

export const streamObject = (data: string) => `<< /Length ${data.length} >>\nstream\n${data}\nendstream`

/**
 * A PDF whose Type3 glyph, `segments` strokes long, is shown `shows` times in one string, on `pages` pages
 * (one by default); with a page of one line after them if `plain`.
 */
export function type3Storm(shows: number, segments: number, plain = false, pages = 1): Uint8Array {
  const glyph = `1000 0 d0\n0 0 m\n${Array.from({ length: segments }, (_, i) => `${(i * 37) % 1000} ${(i * 91) % 1000} l`).join('\n')}\nS`
  const content = `BT /F1 12 Tf 20 700 Td (${'a'.repeat(shows)}) Tj ET`
  // objects 1-6 as before, the plain page (7, 8), then the other storm pages (9 on)
  const more = Array.from({ length: pages - 1 }, (_, i) => 9 + i)
  const kids = [3, ...(plain ? [7] : []), ...more]
  return rawPdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`,
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 0.001 0 0] /CharProcs << /g1 6 0 R >> /Encoding << /Type /Encoding /Differences [97 /g1] >> /FirstChar 97 /LastChar 97 /Widths [1] >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    `<< /Length ${glyph.length} >>\nstream\n${glyph}\nendstream`,
    ...(plain || more.length > 0 ? ['<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 8 0 R >>', streamObject('0 0 m 100 100 l S')] : []),
    ...more.map(() => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>'),
  ])
}
