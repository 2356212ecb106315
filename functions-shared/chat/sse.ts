// A text/event-stream response: named events (with their id, when given) with one JSON data line each, a `: heartbeat` comment
// after `heartbeatMs` without output, and the client's leaving reported through onCancel (the runtime
// cancels the body stream when the connection closes).
import type { Clock } from '../lib/clock.ts'

export type SendEvent = (event: string, data: unknown, id?: number) => void

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  // proxies (nginx and the like) must pass each event on at once
  'X-Accel-Buffering': 'no',
} as const

export function sseResponse(
  options: { clock: Clock; heartbeatMs: number; run: (send: SendEvent) => Promise<void>; onCancel: () => void; headers?: Record<string, string> },
): Response {
  const encoder = new TextEncoder()
  let closed = false
  let cancelHeartbeat = () => {}
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (chunk: string) => {
        if (closed) return
        try {
          controller.enqueue(encoder.encode(chunk))
        } catch {
          closed = true
        }
        arm()
      }
      const arm = () => {
        cancelHeartbeat()
        if (!closed) cancelHeartbeat = options.clock.setTimer(options.heartbeatMs, () => write(': heartbeat\n\n'))
      }
      arm()
      void options
        .run((event, data, id) => write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`))
        .finally(() => {
          cancelHeartbeat()
          if (closed) return
          closed = true
          try {
            controller.close()
          } catch {
            // already cancelled
          }
        })
    },
    cancel() {
      closed = true
      cancelHeartbeat()
      options.onCancel()
    },
  })
  return new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } })
}
