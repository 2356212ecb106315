// The local stack's mail catcher, as the Supabase CLI's (Inbucket, later Mailpit): every email the local
// auth server would send (confirmations, magic links and codes, recoveries, invitations, reauthentication
// nonces) is kept here, newest first, and listed at /mail (a page) and /mail/api/messages (JSON,
// `?to=` filters by address) to the holder of the service-role key. In memory, the last MAILBOX_SIZE
// messages; nothing leaves the machine.
import { Hono } from 'hono'
import type { Deps } from '../../functions-shared/deps.ts'

export interface MailMessage {
  id: string
  to: string
  subject: string
  text: string
  /** the link the message carries, and its code, as they appear in the text */
  link: string | null
  code: string | null
  created_at: string
}

const MAILBOX_SIZE = 500

export class Mailbox {
  readonly #messages: MailMessage[] = []

  send(to: string, subject: string, text: string, extra: { link?: string; code?: string } = {}): MailMessage {
    const message = { id: crypto.randomUUID(), to, subject, text, link: extra.link ?? null, code: extra.code ?? null, created_at: new Date().toISOString() }
    this.#messages.unshift(message)
    this.#messages.length = Math.min(this.#messages.length, MAILBOX_SIZE)
    return message
  }

  list(to?: string): MailMessage[] {
    return to ? this.#messages.filter((m) => m.to === to.toLowerCase()) : [...this.#messages]
  }
}

const boxes = new WeakMap<Deps, Mailbox>()

/** The mailbox of a stack (one per deps: the auth server writes it, the gateway serves it). */
export function mailboxOf(deps: Deps): Mailbox {
  let box = boxes.get(deps)
  if (!box) boxes.set(deps, box = new Mailbox())
  return box
}

const escape = (s: string) => s.replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[ch]!)

/**
 * /mail: the messages as a plain page, and as JSON under /mail/api/messages, for the service-role key only
 * (an `Authorization: Bearer`/`apikey` header, or `?apikey=` for a browser): the mail holds sign-in links
 * and recovery codes, which any other local process could otherwise ask for and follow.
 */
export function mailRouter(box: Mailbox, isServiceKey: (token: string) => Promise<boolean>): Hono {
  const app = new Hono()
  app.use('*', async (c, next) => {
    const token = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1] ?? c.req.header('apikey') ?? c.req.query('apikey')
    if (!token || !(await isServiceKey(token))) {
      return c.json({
        error: 'unauthorized',
        message: 'The local mailbox is read with the service_role key (npm run status prints it): Authorization: Bearer <key>, or ?apikey=<key>',
      }, 401)
    }
    await next()
  })
  app.get('/api/messages', (c) => c.json({ messages: box.list(c.req.query('to')) }))
  app.get('/', (c) => {
    const rows = box.list(c.req.query('to')).map((m) =>
      `<article><h2>${escape(m.subject)}</h2><p>To ${escape(m.to)}, ${escape(m.created_at)}</p><pre>${escape(m.text)}</pre>${
        m.link ? `<p><a href="${escape(m.link)}">${escape(m.link)}</a></p>` : ''
      }</article>`
    )
    return c.html(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Local mail</title></head><body><h1>Mail the local auth server sent</h1>${
        rows.length ? rows.join('<hr>') : '<p>No mail yet.</p>'
      }</body></html>`,
    )
  })
  return app
}
