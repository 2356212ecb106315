// deno-lint-ignore-file no-explicit-any -- the API's JSON, read field by field
// A small client of the service's HTTP API for the operator CLI and the demo: JSON calls with a bearer
// token (or the deprecated X-Admin-Key), rate-limited calls retried when the server says, errors that
// carry the status, error code and request id, and an SSE reader for the chat.
export class ApiCallError extends Error {
  override name = 'ApiCallError'
  readonly status: number
  readonly body: Record<string, unknown>
  constructor(method: string, path: string, status: number, body: Record<string, unknown>) {
    super(
      `${method} ${path} → ${status} ${String(body.error ?? '')}: ${String(body.message ?? body.msg ?? JSON.stringify(body))}${
        body.request_id ? ` (request ${String(body.request_id)})` : ''
      }`,
    )
    this.status = status
    this.body = body
  }
}

export interface ApiClientOptions {
  /** the gateway's root, e.g. http://127.0.0.1:54321 (or https://<ref>.supabase.co) */
  url: string
  /** an access token or a service-role key */
  token?: string | undefined
  /** the deprecated admin key, sent as X-Admin-Key */
  adminKey?: string | undefined
  /** the anon key, sent as `apikey` (the Supabase API gateway wants one) */
  apikey?: string | undefined
  /** told before each wait a 429 `rate_limited` imposes, so that a long one is not a silent pause */
  onRateLimited?: ((wait: { seconds: number; method: string; path: string }) => void) | undefined
}

export type SseEvent = { event: string; data: any }

export class ApiClient {
  readonly url: string
  readonly #o: ApiClientOptions
  /** the rate limit of the last call that reported one (X-RateLimit-Limit and -Remaining) */
  rateLimit: { limit: number; remaining: number } | null = null
  constructor(options: ApiClientOptions) {
    this.url = options.url.replace(/\/$/, '')
    this.#o = options
  }

  withToken(token: string): ApiClient {
    return new ApiClient({ ...this.#o, token, adminKey: undefined })
  }

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...(this.#o.token ? { authorization: `Bearer ${this.#o.token}` } : {}),
      ...(this.#o.adminKey ? { 'x-admin-key': this.#o.adminKey } : {}),
      ...(this.#o.apikey ?? this.#o.token ? { apikey: (this.#o.apikey ?? this.#o.token)! } : {}),
      ...extra,
    }
  }

  /** `path` is under /functions/v1 unless it starts with /auth/v1. */
  #full(path: string): string {
    return `${this.url}${path.startsWith('/auth/v1') ? '' : '/functions/v1'}${path}`
  }

  /** One call; a 429 `rate_limited` is retried (up to 5 times) after the `retry_after` the server gives. */
  async call<T = Record<string, any>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    for (let attempt = 1;; attempt++) {
      try {
        return await this.#once<T>(method, path, body, headers)
      } catch (err) {
        if (!(err instanceof ApiCallError && err.status === 429 && err.body.error === 'rate_limited' && attempt < 5)) throw err
        const seconds = Number(err.body.retry_after ?? 1)
        this.#o.onRateLimited?.({ seconds, method, path })
        await new Promise((r) => setTimeout(r, seconds * 1000))
      }
    }
  }

  async #once<T>(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<T> {
    const res = await fetch(this.#full(path), {
      method,
      headers: this.#headers({ ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const limit = Number(res.headers.get('x-ratelimit-limit'))
    const remaining = Number(res.headers.get('x-ratelimit-remaining'))
    if (res.headers.has('x-ratelimit-remaining') && limit > 0 && Number.isFinite(remaining)) this.rateLimit = { limit, remaining }
    const text = await res.text()
    let json: Record<string, unknown>
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : {}
    } catch {
      json = { message: text.slice(0, 300) }
    }
    if (!res.ok) throw new ApiCallError(method, path, res.status, json)
    return json as T
  }

  get = <T = Record<string, any>>(path: string) => this.call<T>('GET', path)
  post = <T = Record<string, any>>(path: string, body: unknown = {}, headers: Record<string, string> = {}) => this.call<T>('POST', path, body, headers)
  patch = <T = Record<string, any>>(path: string, body: unknown) => this.call<T>('PATCH', path, body)

  /** POSTs and yields the SSE events as they arrive. */
  async *stream(path: string, body: unknown): AsyncGenerator<SseEvent> {
    const res = await fetch(this.#full(path), {
      method: 'POST',
      headers: this.#headers({ 'content-type': 'application/json', accept: 'text/event-stream' }),
      body: JSON.stringify(body),
    })
    if (!res.ok) {
      const json = (await res.json().catch(() => ({}))) as Record<string, unknown>
      throw new ApiCallError('POST', path, res.status, json)
    }
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ''
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        let event = 'message'
        const data: string[] = []
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim()
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart())
        }
        if (data.length > 0) yield { event, data: JSON.parse(data.join('\n')) }
      }
    }
  }
}
