// The worker thread of pdf-isolate.ts: reads one PDF at a time with extractPdf and posts back its pages,
// or the error. pdf.js works here, not on the server's thread.
import { parentPort } from 'node:worker_threads'
import { extractPdf, PdfError } from '../../functions-shared/pdf/extract.ts'

parentPort!.on('message', async (message: { id: number; bytes: Uint8Array; options: Parameters<typeof extractPdf>[1] }) => {
  try {
    const result = await extractPdf(message.bytes, message.options)
    parentPort!.postMessage({ id: message.id, result })
  } catch (err) {
    parentPort!.postMessage({ id: message.id, error: { message: (err as Error).message, pdf: err instanceof PdfError } })
  }
})
