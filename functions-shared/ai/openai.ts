// The openai provider: the official SDK against OPENAI_BASE_URL (OpenAI, or any compatible server:
// vLLM, Ollama, llama.cpp). Every call has a timeout; the SDK's own retries are off (the callers retry
// where the spec says so, and the chat has a circuit breaker). The SDK is loaded on the first call, so
// a function that never calls the model (health, wallet, me) does not load it at start.
import type OpenAI from 'openai'
import { type AiProvider, ProviderError } from './provider.ts'

// what the model reads of each text it ranks: a candidate is a page, up to two windows of a page that
// is cut in several (chat/pages.ts), about 2,000 characters each for French; the rest is left out
const RERANK_DOCUMENT_CHARS = 4000

export interface OpenAiSettings {
  apiKey: string
  baseUrl?: string | undefined
  chatModel: string
  embeddingModel: string
  rerankModel: string
  translateModel: string
  dimension: number
  timeoutMs: number
  fetch?: typeof fetch
}

/** The SDK's error class, once the SDK is loaded (before that, no error can be one). */
let ApiError: typeof OpenAI.APIError | undefined

function toProviderError(err: unknown, what: string): ProviderError {
  if (err instanceof ProviderError) return err
  if (ApiError && err instanceof ApiError) {
    const status = err.status
    const retryAfter = Number(err.headers?.get?.('retry-after'))
    return new ProviderError(`${what}: ${status ?? ''} ${err.message}`.trim(), {
      transient: status === undefined || status === 408 || status === 409 || status === 429 || status >= 500,
      ...(status === undefined ? {} : { status }),
      ...(Number.isFinite(retryAfter) ? { retryAfterMs: retryAfter * 1000 } : {}),
      cause: err,
    })
  }
  return new ProviderError(`${what}: ${(err as Error).message}`, { transient: true, cause: err })
}

/**
 * The SDK's timeout ends once the response's headers arrive: a server that sends them and then stalls
 * would hold the call (and the chat turn, its reservation and its client) for ever. This deadline covers
 * the body too: `ms` after it starts, or after the last `alive()` (each piece of a streamed answer), the
 * call is aborted. The caller's signal (a client that left) aborts it as well.
 */
function deadline(ms: number, caller?: AbortSignal) {
  const controller = new AbortController()
  let expired = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(() => ((expired = true), controller.abort()), ms)
  }
  const left = () => controller.abort()
  if (caller?.aborted) controller.abort()
  caller?.addEventListener('abort', left, { once: true })
  arm()
  return {
    signal: controller.signal,
    alive: arm,
    get expired() {
      return expired
    },
    /** the ProviderError of a call that outlived its deadline, or the error as it is */
    error: (err: unknown, what: string) =>
      expired ? new ProviderError(`${what}: no answer from the model within ${ms} ms`, { transient: true, cause: err }) : toProviderError(err, what),
    done: () => {
      clearTimeout(timer)
      caller?.removeEventListener('abort', left)
    },
  }
}

export function createOpenAiProvider(s: OpenAiSettings): AiProvider {
  let loading: Promise<OpenAI> | undefined
  const client = () => (loading ??= import('openai').then(
    ({ default: Sdk }) => {
      ApiError = Sdk.APIError
      return new Sdk({ apiKey: s.apiKey, baseURL: s.baseUrl, timeout: s.timeoutMs, maxRetries: 0, ...(s.fetch ? { fetch: s.fetch } : {}) })
    },
    (err: unknown) => {
      loading = undefined // the next call tries again
      throw err
    },
  ))
  return {
    name: 'openai',
    dimension: s.dimension,
    translates: true,
    async embed(texts) {
      const d = deadline(s.timeoutMs)
      try {
        const res = await (await client()).embeddings.create({ model: s.embeddingModel, input: [...texts], dimensions: s.dimension }, { signal: d.signal })
        return res.data.sort((a, b) => a.index - b.index).map((e) => e.embedding)
      } catch (err) {
        throw d.error(err, 'embeddings')
      } finally {
        d.done()
      }
    },
    async chat(request, onDelta) {
      const sources = request.snippets.map((sn) => `[${sn.n}] ${sn.title ? `${sn.title}, ` : ''}${sn.page_number ? `p. ${sn.page_number}: ` : ''}${sn.text}`)
        .join('\n\n')
      const messages = [...request.messages]
      if (sources) messages.splice(messages.length - 1, 0, { role: 'system', content: `Curriculum extracts (cite them as [n]):\n\n${sources}` })
      // a long answer may take longer than the timeout: it bounds the wait for each piece
      const d = deadline(s.timeoutMs, request.signal)
      try {
        const stream = await (await client()).chat.completions.create(
          { model: s.chatModel, messages, stream: true, max_tokens: request.maxTokens },
          { signal: d.signal },
        )
        let model = s.chatModel
        for await (const chunk of stream) {
          d.alive()
          model = chunk.model || model
          const text = chunk.choices[0]?.delta?.content
          if (text) onDelta(text)
        }
        // the SDK's stream ends quietly when it is aborted: a stalled answer is a failure, not an end
        if (d.expired) throw new Error('the stream stalled')
        return { model, extractive: false }
      } catch (err) {
        throw d.error(err, 'chat')
      } finally {
        d.done()
      }
    },
    async rerank(query, documents, topN, signal, _similarity, topics) {
      // each passage with the lesson it is from, as the lesson's opening sentence names it
      const list = documents.map((d, i) => `${i}: ${topics?.[i] ? `(lesson: ${topics[i]}) ` : ''}${d.slice(0, RERANK_DOCUMENT_CHARS)}`).join('\n\n')
      const d = deadline(s.timeoutMs, signal)
      try {
        const res = await (await client()).chat.completions.create(
          {
            model: s.rerankModel,
            temperature: 0,
            messages: [
              {
                role: 'system',
                content:
                  `Rank the passages by how well they answer the question. Answer with JSON only: {"ranking": [indices, best first]}, at most ${topN} indices.`,
              },
              { role: 'user', content: `Question: ${query}\n\nPassages:\n${list}` },
            ],
          },
          { signal: d.signal },
        )
        const content = res.choices[0]?.message?.content ?? ''
        const parsed = JSON.parse(content.slice(content.indexOf('{'), content.lastIndexOf('}') + 1)) as { ranking?: unknown }
        if (!Array.isArray(parsed.ranking)) throw new ProviderError('rerank: the model did not return a ranking', { transient: false })
        const seen = new Set<number>()
        return parsed.ranking
          .map(Number)
          .filter((i) => Number.isInteger(i) && i >= 0 && i < documents.length && !seen.has(i) && (seen.add(i), true))
          .slice(0, topN)
      } catch (err) {
        if (err instanceof SyntaxError) throw new ProviderError('rerank: the model did not return JSON', { transient: false, cause: err })
        throw d.error(err, 'rerank')
      } finally {
        d.done()
      }
    },
    async translate(text, from, to, signal) {
      const d = deadline(s.timeoutMs, signal)
      try {
        const res = await (await client()).chat.completions.create(
          {
            model: s.translateModel,
            temperature: 0,
            messages: [
              { role: 'system', content: `Translate the user's text from ${from} to ${to}. Answer with the translation only.` },
              { role: 'user', content: text },
            ],
          },
          { signal: d.signal },
        )
        const out = res.choices[0]?.message?.content?.trim()
        if (!out) throw new ProviderError('translate: empty answer', { transient: false })
        return out
      } catch (err) {
        throw d.error(err, 'translate')
      } finally {
        d.done()
      }
    },
  }
}
