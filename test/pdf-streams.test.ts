// The decompression guard reads a PDF as pdf.js does: every way of writing a stream that pdf.js expands
// is counted, whatever the dictionary says or hides, and only images that are what they say are left out.
import { describe, expect, it } from 'vitest'
import { brotliCompressSync, deflateRawSync, deflateSync } from 'node:zlib'
import { extractPdf } from '../functions-shared/pdf/extract.ts'
import { inflatedSize } from '../functions-shared/pdf/stream-check.ts'
import { makePdf } from '../scripts/lib/pdf.ts'
import { readdirSync, readFileSync } from 'node:fs'
import PDFDocument from 'pdfkit'

const MB = 1024 * 1024
// a page's content: 8 MB of text-drawing spaces, the kind of stream pdf.js inflates whole
const CONTENT = Buffer.alloc(8 * MB, 0x20)
const LIMIT = 4 * MB

/** A one-page PDF whose page content is object 4 (its dictionary and data given), with other objects after it. */
function pdfWith(dictionary: string, data: Buffer, options: { eol?: string; extra?: (string | Buffer)[] } = {}): Uint8Array {
  const objects: (string | Buffer)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>',
    Buffer.concat([Buffer.from(`${dictionary}\nstream${options.eol ?? '\n'}`, 'latin1'), data, Buffer.from('\nendstream')]),
    ...(options.extra ?? []),
  ]
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n')]
  const offsets: number[] = []
  const length = () => parts.reduce((n, p) => n + p.length, 0)
  for (const [i, body] of objects.entries()) {
    offsets.push(length())
    parts.push(Buffer.from(`${i + 1} 0 obj\n`), Buffer.isBuffer(body) ? body : Buffer.from(body, 'latin1'), Buffer.from('\nendobj\n'))
  }
  const xref = length()
  parts.push(
    Buffer.from(
      `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}trailer\n<< /Size ${
        objects.length + 1
      } /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`,
    ),
  )
  return new Uint8Array(Buffer.concat(parts))
}

const ascii85 = (data: Buffer): Buffer => {
  let out = ''
  for (let i = 0; i < data.length; i += 4) {
    const group = [0, 1, 2, 3].map((k) => data[i + k] ?? 0)
    const n = Math.min(4, data.length - i)
    let v = ((group[0]! << 24) >>> 0) + (group[1]! << 16) + (group[2]! << 8) + group[3]!
    if (v === 0 && n === 4) {
      out += 'z'
      continue
    }
    const chars: string[] = []
    for (let k = 0; k < 5; k++) {
      chars.unshift(String.fromCharCode((v % 85) + 33))
      v = Math.floor(v / 85)
    }
    out += chars.slice(0, n + 1).join('')
  }
  return Buffer.from(`${out}~>`, 'latin1')
}

/** LZW as PDF writes it (9 to 12-bit codes, a clear code first, the table cleared when full). */
function lzw(data: Buffer, earlyChange: 0 | 1): Buffer {
  const out: number[] = []
  let buffer = 0
  let bits = 0
  let width = 9
  const write = (code: number) => {
    buffer = (buffer << width) | code
    bits += width
    while (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff)
      bits -= 8
      buffer &= (1 << bits) - 1
    }
  }
  let table = new Map<string, number>()
  let next = 258
  const reset = () => {
    table = new Map()
    next = 258
    width = 9
  }
  write(256)
  let current = String.fromCharCode(data[0]!)
  for (let i = 1; i < data.length; i++) {
    const c = String.fromCharCode(data[i]!)
    const joined = current + c
    if (table.has(joined)) {
      current = joined
      continue
    }
    write(current.length === 1 ? current.charCodeAt(0) : table.get(current)!)
    table.set(joined, next++)
    // the decoder's table is one entry behind: it widens its codes when its own count reaches the mark
    if (next + earlyChange > 1 << width && width < 12) width++
    if (next >= 4094) {
      write(256)
      reset()
    }
    current = c
  }
  write(current.length === 1 ? current.charCodeAt(0) : table.get(current)!)
  write(257)
  if (bits > 0) out.push((buffer << (8 - bits)) & 0xff)
  return Buffer.from(out)
}

const adler32 = (data: Buffer): number => {
  let a = 1
  let b = 0
  for (const byte of data) {
    a = (a + byte) % 65521
    b = (b + a) % 65521
  }
  return ((b << 16) | a) >>> 0
}

describe('inflatedSize reads a PDF as pdf.js does', () => {
  const flate = deflateSync(CONTENT)

  it('counts a content stream whatever its dictionary says: labelled an image, a string holding "obj", a CR after "stream", a name spelt with #xx, /F for /Filter', async () => {
    const variants = {
      'an image label': pdfWith(`<< /Length ${flate.length} /Filter /FlateDecode /Subtype /Image >>`, flate),
      'a string holding obj and >>': pdfWith(`<< /Length ${flate.length} /Filter /FlateDecode /Note (2 0 obj << /Subtype /Image >>) >>`, flate),
      'a lone CR after stream': pdfWith(`<< /Length ${flate.length} /Filter /FlateDecode >>`, flate, { eol: '\r' }),
      'a name with #xx': pdfWith(`<< /Length ${flate.length} /Filter /F#6cateDecode >>`, flate),
      '/F and an abbreviation': pdfWith(`<< /Length ${flate.length} /F /Fl >>`, flate),
    }
    for (const [name, pdf] of Object.entries(variants)) {
      expect(await inflatedSize(pdf, 64 * MB), name).toBe(CONTENT.length)
      await expect(extractPdf(pdf, { deadlineMs: 20_000, maxInflatedBytes: LIMIT }), name).rejects.toThrow(/expand to more than 4 MB/)
    }
  })

  it('decodes every filter that expands data, in its order: Flate twice, ASCII85 and hex around Flate, RunLength, LZW with either EarlyChange, Brotli', async () => {
    const some = CONTENT.subarray(0, MB)
    const cases: [string, string, Buffer, number][] = [
      ['Flate twice', '[/FlateDecode /FlateDecode]', deflateSync(flate), CONTENT.length],
      ['ASCII85 then Flate', '[/A85 /Fl]', ascii85(flate), CONTENT.length],
      ['hex then Flate', '[/ASCIIHexDecode /FlateDecode]', Buffer.from(`${flate.toString('hex')}>`), CONTENT.length],
      [
        'RunLength',
        '/RunLengthDecode',
        Buffer.concat([Buffer.alloc((some.length / 128) * 2).map((_, i) => (i % 2 === 0 ? 129 : 0x20)), Buffer.from([128])]),
        some.length,
      ],
      ['Brotli', '/BrotliDecode', brotliCompressSync(CONTENT), CONTENT.length],
    ]
    for (const [name, filter, data, expected] of cases) {
      expect(await inflatedSize(pdfWith(`<< /Length ${data.length} /Filter ${filter} >>`, data), 64 * MB), name).toBe(expected)
    }
    const text = Buffer.from('BT /F1 12 Tf 72 720 Td (Le programme de mathematiques) Tj ET\n'.repeat(2000))
    for (const early of [0, 1] as const) {
      const data = lzw(text, early)
      expect(data.length).toBeLessThan(text.length / 4)
      expect(
        await inflatedSize(pdfWith(`<< /Length ${data.length} /Filter /LZWDecode /DecodeParms << /EarlyChange ${early} >> >>`, data), 64 * MB),
        `LZW, EarlyChange ${early}`,
      ).toBe(text.length)
    }
  })

  it('finds where the data ends when its /Length cannot be read and the data holds "endstream"', async () => {
    // a zlib stream whose first block is stored and holds the bytes "endstream", then the content
    const stored = Buffer.from('\nendstream\nendobj\n')
    const header = Buffer.from([0x78, 0x01, 0x00, stored.length & 0xff, stored.length >> 8, ~stored.length & 0xff, (~stored.length >> 8) & 0xff])
    const tail = Buffer.alloc(4)
    tail.writeUInt32BE(adler32(Buffer.concat([stored, CONTENT])))
    const data = Buffer.concat([header, stored, deflateRawSync(CONTENT), tail])
    // /Length names an object that is not in the file: pdf.js looks for the end, and inflates past the stored block
    const pdf = pdfWith('<< /Length 99 0 R /Filter /FlateDecode >>', data)
    expect(await inflatedSize(pdf, 64 * MB)).toBe(stored.length + CONTENT.length)
  })

  it('looks at a stream inside the data of another: a /Length that spans it does not hide it', async () => {
    const bomb = Buffer.concat([
      Buffer.from(`6 0 obj\n<< /Length ${flate.length} /Filter /FlateDecode >>\nstream\n`),
      flate,
      Buffer.from('\nendstream\nendobj\n'),
    ])
    const decoy = Buffer.concat([Buffer.from(`<< /Length ${bomb.length + 2} >>\nstream\nq\n`), bomb, Buffer.from('Q\nendstream')])
    const pdf = pdfWith('<< /Length 0 >>', Buffer.alloc(0), { extra: [decoy] })
    expect(await inflatedSize(pdf, 64 * MB)).toBe(CONTENT.length)
  })

  it('leaves out an image that decodes to no more than its size says, and counts one that decodes to more', async () => {
    const pixels = Buffer.alloc(2048 * 2048, 0x80) // 4 MB of grey
    const image = deflateSync(pixels)
    const honest = pdfWith('<< /Length 0 >>', Buffer.alloc(0), {
      extra: [
        Buffer.concat([
          Buffer.from(
            `<< /Type /XObject /Subtype /Image /Width 2048 /Height 2048 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length ${image.length} /Filter /FlateDecode >>\nstream\n`,
          ),
          image,
          Buffer.from('\nendstream'),
        ]),
      ],
    })
    expect(await inflatedSize(honest, LIMIT / 2)).toBe(0)
    const small = pdfWith('<< /Length 0 >>', Buffer.alloc(0), {
      extra: [
        Buffer.concat([
          Buffer.from(
            `<< /Type /XObject /Subtype /Image /Width 16 /Height 16 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length ${flate.length} /Filter /FlateDecode >>\nstream\n`,
          ),
          flate,
          Buffer.from('\nendstream'),
        ]),
      ],
    })
    expect(await inflatedSize(small, 64 * MB)).toBe(CONTENT.length)
  })

  it('refuses a file whose streams would make the check read it over and over: keywords by the hundred before one far endstream', async () => {
    // 300 stream keywords, each with a Flate dictionary, then 1 MB before the only "endstream"
    const keywords = Array.from({ length: 300 }, (_, i) => `${i + 10} 0 obj\n<< /Filter /FlateDecode >>\nstream\n`).join('')
    const pdf = pdfWith('<< /Length 0 >>', Buffer.alloc(0), {
      extra: [Buffer.concat([Buffer.from(`<< /Length 1 >>\nstream\n${keywords}`), Buffer.alloc(MB, 0x61), Buffer.from('\nendstream')])],
    })
    await expect(inflatedSize(pdf)).rejects.toThrow(/written inside one another/)
    await expect(extractPdf(pdf, { deadlineMs: 20_000 })).rejects.toThrow(/written inside one another: they cannot be checked: refused before reading/)
  })

  it('decrypts the streams of a PDF encrypted with an empty user password before measuring them: RC4 40 and 128, AES-128, AES-256', async () => {
    const fixture = (name: string) => new Uint8Array(readFileSync(new URL(`./fixtures/encrypted/${name}`, import.meta.url)))
    for (const name of ['rc4-40.pdf', 'rc4-128.pdf', 'aes-128.pdf', 'aes-256.pdf', 'aes-256-xref-stream.pdf']) {
      expect(await inflatedSize(fixture(name)), name).toBeGreaterThanOrEqual(8 * MB)
      await expect(extractPdf(fixture(name), { deadlineMs: 20_000, maxInflatedBytes: LIMIT }), name).rejects.toThrow(/expand to more than 4 MB/)
    }
    // AES data whose last block is cut short: pdf.js decrypts the whole blocks and leaves the rest
    const aes = Buffer.from(fixture('aes-128.pdf'))
    const text = aes.toString('latin1')
    const dict = /<< \/Filter \/FlateDecode \/Length (\d+) >>\r?\nstream\r?\n/.exec(text)!
    const length = Number(dict[1])
    const dataStart = dict.index + dict[0].length
    const cut = Buffer.concat([
      aes.subarray(0, dict.index),
      Buffer.from(dict[0].replace(String(length), String(length + 5)), 'latin1'),
      aes.subarray(dataStart, dataStart + length),
      Buffer.from('12345'),
      aes.subarray(dataStart + length),
    ])
    expect(await inflatedSize(new Uint8Array(cut))).toBeGreaterThanOrEqual(8 * MB)
    // a user password: pdf.js cannot open it either
    await expect(extractPdf(fixture('aes-256-user-password.pdf'), { deadlineMs: 20_000 })).rejects.toThrow(/encrypted with a password: refused before reading/)
  })

  it('reads a lesson that pdfkit protected (R3, R4, R5) as pdf.js does: the same count as unprotected, and its text', async () => {
    const lesson = (options: object) =>
      new Promise<Uint8Array>((resolve) => {
        const doc = new PDFDocument({ ...options, info: { CreationDate: new Date(0) } })
        const chunks: Buffer[] = []
        doc.on('data', (c: Buffer) => chunks.push(c))
        doc.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))))
        doc.text('Leçon : les équations du premier degré. '.repeat(40))
        doc.end()
      })
    const plain = await inflatedSize(await lesson({}))
    expect(plain).toBeGreaterThan(1000)
    for (const pdfVersion of ['1.4', '1.7', '1.7ext3']) {
      const protectedPdf = await lesson({ ownerPassword: 'owner-secret', pdfVersion })
      expect(await inflatedSize(protectedPdf), pdfVersion).toBe(plain)
      expect((await extractPdf(protectedPdf, { deadlineMs: 20_000 })).pages[0]!.text, pdfVersion).toContain('équations du premier degré')
    }
  })

  it('counts the PDFs a red team got past the check before (test/fixtures/bombs/): lenient deflate and LZW as pdf.js reads them, references and /F, long lines, dictionaries it cannot read, encryption it may or may not apply', async () => {
    const dir = new URL('./fixtures/bombs/', import.meta.url)
    const files = readdirSync(dir).filter((f) => f.endsWith('.pdf'))
    expect(files.length).toBe(17)
    for (const name of files) {
      const bytes = new Uint8Array(readFileSync(new URL(name, dir)))
      const counted = await inflatedSize(bytes, MB).catch((err: Error) => err)
      if (counted instanceof Error) expect(counted.message, name).toMatch(/cannot be|encrypted/)
      else expect(counted, name).toBeGreaterThan(MB)
    }
  })

  it('counts a typeset lesson, fonts and text, far below the limit, and reads it', async () => {
    const lesson = await makePdf(['Leçon 1 : les équations du premier degré à une inconnue, et leur résolution.'])
    const size = await inflatedSize(lesson)
    expect(size).toBeGreaterThan(100)
    expect(size).toBeLessThan(MB)
    expect((await extractPdf(lesson, { deadlineMs: 20_000 })).pages[0]!.text).toContain('équations')
  })
})
