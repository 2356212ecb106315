// Reads a text/event-stream response as it arrives: events (name + parsed JSON data) and comments.
export type SseItem = { kind: 'event'; event: string; data: any; id?: number } | { kind: 'comment'; text: string }

export interface SseReader {
  /** the next event or comment; null at the end of the stream */
  next(): Promise<SseItem | null>
  /** reads to the end */
  rest(): Promise<SseItem[]>
  /** the client leaves: the connection is closed */
  cancel(): Promise<void>
}

export function readSse(res: Response): SseReader {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const parse = (block: string): SseItem => {
    const lines = block.split('\n')
    if (lines.every((l) => l.startsWith(':'))) return { kind: 'comment', text: lines.map((l) => l.slice(1).trim()).join('\n') }
    let event = 'message'
    let id: number | undefined
    const data: string[] = []
    for (const line of lines) {
      if (line.startsWith('event:')) event = line.slice(6).trim()
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
      else if (line.startsWith('id:')) id = Number(line.slice(3).trim())
    }
    return { kind: 'event', event, data: JSON.parse(data.join('\n')), ...(id === undefined ? {} : { id }) }
  }
  const next = async (): Promise<SseItem | null> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (block.trim() !== '') return parse(block)
        continue
      }
      const { value, done } = await reader.read()
      if (done) return null
      buffer += decoder.decode(value, { stream: true })
    }
  }
  return {
    next,
    async rest() {
      const items: SseItem[] = []
      for (let item = await next(); item; item = await next()) items.push(item)
      return items
    },
    cancel: () => reader.cancel(),
  }
}

export const events = (items: SseItem[]) => items.filter((i): i is Extract<SseItem, { kind: 'event' }> => i.kind === 'event')
