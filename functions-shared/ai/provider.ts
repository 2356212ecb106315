// The AI provider interface (ARCHITECTURE.md §5): embeddings, chat with streaming, rerank, translate.
// Two implementations: `openai` (the official SDK; any OpenAI-compatible server through OPENAI_BASE_URL)
// and `offline` (deterministic, no network).

export interface Embedder {
  readonly name: string
  readonly dimension: number
  /** one vector per text, each of `dimension` numbers, L2-normalized */
  embed(texts: readonly string[]): Promise<number[][]>
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

export interface Snippet {
  /** 1-based citation number */
  n: number
  text: string
  title?: string | null
  page_number?: number | null
}

export interface ChatRequest {
  messages: ChatMessage[]
  /** the retrieved snippets the answer must rest on (the offline provider answers from these alone) */
  snippets: Snippet[]
  language: 'fr' | 'ar' | 'hassaniya'
  maxTokens: number
  signal?: AbortSignal
}

export interface ChatResult {
  model: string
  /** true when the answer is extracted from the snippets rather than written by a model */
  extractive: boolean
}

export interface AiProvider extends Embedder {
  /** streams the answer's text as it is generated; resolves with the result when done */
  chat(request: ChatRequest, onDelta: (text: string) => void): Promise<ChatResult>
  /**
   * indices of `documents`, best first, at most `topN`. `similarity`, when given, is how near the search
   * put each document (the hybrid search's fused score, or the dense search's cosine similarity; one
   * kind for all documents of a call); `topics`, each document's lesson as its
   * opening sentence names it (a reranker may use either, or not).
   */
  rerank(
    query: string,
    documents: readonly string[],
    topN: number,
    signal?: AbortSignal,
    similarity?: readonly number[],
    topics?: readonly (string | null)[],
  ): Promise<number[]>
  /** whether translate really translates (false: the offline provider, whose translate is the identity) */
  readonly translates: boolean
  /** the text in `to`; the offline provider returns it unchanged */
  translate(text: string, from: string, to: string, signal?: AbortSignal): Promise<string>
}

/** An error from a provider: transient ones (network, timeouts, 429, 5xx) are worth another try. */
export class ProviderError extends Error {
  override name = 'ProviderError'
  readonly transient: boolean
  readonly status: number | undefined
  readonly retryAfterMs: number | undefined
  constructor(message: string, options: { transient: boolean; status?: number; retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: options.cause })
    this.transient = options.transient
    this.status = options.status
    this.retryAfterMs = options.retryAfterMs
  }
}

/**
 * Whether the provider refused the request for what it holds (400 longer than the model's context, a
 * content filter; 413; 422): that request's fault, which a retry meets again, not the service's.
 */
export function refusedByModel(err: unknown): boolean {
  return err instanceof ProviderError && !err.transient && (err.status === 400 || err.status === 413 || err.status === 422)
}
