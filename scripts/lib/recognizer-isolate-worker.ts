// The worker thread of recognizer-isolate.ts: one tesseract.js recognizer (which runs in a thread of its
// own, inside this process), answering the parent's requests one at a time. Of a reading only what the
// caller keeps goes back: the text, the confidence and each line's text and confidence.
import { parentPort, workerData } from 'node:worker_threads'
import { createWorker, OEM, PSM } from 'tesseract.js'
import type { RecognizerReply, RecognizerRequest } from './recognizer-isolate.ts'

const { languages, langPath, dpi } = workerData as { languages: string; langPath: string; dpi: number }

const ready = (async () => {
  const worker = await createWorker(languages, OEM.LSTM_ONLY, { langPath, gzip: true, cacheMethod: 'none' })
  await worker.setParameters({ tessedit_pageseg_mode: PSM.AUTO, preserve_interword_spaces: '1', user_defined_dpi: String(dpi) })
  return worker
})()

parentPort!.on('message', async (request: RecognizerRequest) => {
  const reply = (r: RecognizerReply) => parentPort!.postMessage(r)
  try {
    const worker = await ready
    if (request.op === 'ready') reply({ id: request.id })
    else if (request.op === 'dpi') {
      await worker.setParameters({ user_defined_dpi: String(request.dpi) })
      reply({ id: request.id })
    } else if (request.op === 'languages') {
      await worker.reinitialize(request.languages, OEM.LSTM_ONLY)
      reply({ id: request.id })
    } else {
      const { data } = await worker.recognize(Buffer.from(request.image), {}, { text: true, blocks: true })
      const blocks =
        data.blocks?.map((b) => ({ paragraphs: b.paragraphs.map((p) => ({ lines: p.lines.map((l) => ({ text: l.text, confidence: l.confidence })) })) })) ??
          null
      reply({ id: request.id, reading: { text: data.text, confidence: data.confidence, blocks } })
    }
  } catch (err) {
    reply({ id: request.id, error: (err as Error).message })
  }
})
