// An OpenAI-compatible HTTP server on loopback (embeddings; chat completions, streaming and not), so
// tests run the real openai SDK, its SSE parsing and its error handling. It records every call.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { offlineVector } from '../../functions-shared/ai/offline-embedder.ts'

export interface Scripted {
  /** the answer text (streamed in pieces of a few words) */
  content?: string
  /** an HTTP error instead */
  status?: number
  headers?: Record<string, string>
  /** wait this long before answering */
  delayMs?: number
  /** when streaming, wait this long between pieces */
  pieceDelayMs?: number
  /** answer only once this settles */
  gate?: Promise<unknown>
  /** the model name the server reports (default: the requested one + "-served") */
  model?: string
  /** the error message of an HTTP error */
  errorMessage?: string
  /** when streaming, fail the connection after this many pieces */
  breakAfter?: number
  /** send the headers (and, streaming, this many pieces; otherwise the body's first byte), then nothing more, ever */
  stallAfter?: number
}

export interface OpenAiServer {
  url: string
  calls: { path: string; body: Record<string, any> }[]
  /** decides the answer of each chat completion (default: echo the last user message) */
  chat: (body: Record<string, any>) => Scripted
  embeddings: (body: Record<string, any>) => Scripted
  close(): Promise<void>
}

export async function startOpenAiServer(): Promise<OpenAiServer> {
  const state: OpenAiServer = {
    url: '',
    calls: [],
    chat: (body) => ({ content: `echo: ${body.messages.at(-1)?.content ?? ''}` }),
    embeddings: () => ({}),
    close: async () => {},
  }
  const server: Server = createServer(async (req, res) => {
    let raw = ''
    for await (const chunk of req) raw += chunk
    const body = raw ? (JSON.parse(raw) as Record<string, any>) : {}
    const path = new URL(req.url!, 'http://x').pathname
    state.calls.push({ path, body })
    const script = path.endsWith('/embeddings') ? state.embeddings(body) : state.chat(body)
    if (script.delayMs) await new Promise((r) => setTimeout(r, script.delayMs))
    if (script.gate) await script.gate
    if (res.destroyed) return
    if (script.status) {
      res.writeHead(script.status, { 'content-type': 'application/json', ...script.headers })
      return res.end(JSON.stringify({ error: { message: script.errorMessage ?? `scripted ${script.status}`, type: 'server_error', code: null } }))
    }
    if (script.stallAfter !== undefined && !body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' })
      return void res.write('{')
    }
    if (path.endsWith('/embeddings')) {
      const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input]
      return res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          object: 'list',
          model: body.model,
          // the SDK asks for base64 (little-endian float32), as the real API serves it
          data: inputs.map((text, index) => {
            const vector = offlineVector(text, body.dimensions ?? 1536)
            const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector
            return { object: 'embedding', index, embedding }
          }),
          usage: { prompt_tokens: 1, total_tokens: 1 },
        }),
      )
    }
    const content = script.content ?? ''
    const base = { id: 'chatcmpl-test', created: 1_790_000_000, model: script.model ?? `${body.model}-served` }
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      const pieces = content.match(/\S+\s*/g) ?? []
      for (const [i, piece] of pieces.entries()) {
        if (res.destroyed) return
        if (script.breakAfter !== undefined && i >= script.breakAfter) return void res.destroy()
        if (script.stallAfter !== undefined && i >= script.stallAfter) return
        res.write(
          `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`,
        )
        if (script.pieceDelayMs) await new Promise((r) => setTimeout(r, script.pieceDelayMs))
      }
      if (res.destroyed) return
      res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`)
      return res.end('data: [DONE]\n\n')
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    )
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return state
}
