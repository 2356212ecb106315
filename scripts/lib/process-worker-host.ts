// The child process of process-worker.ts: starts the one worker thread it was asked for and relays its
// messages, errors, exit and heap statistics to the parent. It ends when its thread ends or when the
// parent goes away.
import type { HeapInfo } from 'node:v8'
import { type ResourceLimits, Worker } from 'node:worker_threads'

export type ParentMessage =
  | { type: 'start'; file: string; workerData: unknown; resourceLimits?: ResourceLimits }
  | { type: 'message'; value: unknown }
  | { type: 'heap'; id: number }

export type HostMessage =
  | { type: 'message'; value: unknown }
  | { type: 'heap'; id: number; info?: HeapInfo; error?: string }
  | { type: 'error'; message: string; code?: string }
  | { type: 'exit'; code: number }

// only when run as the host, not when the parent imports the types above
if (process.send) {
  let worker: Worker | undefined
  // a thread answers for its heap once it runs
  let online: Promise<unknown> = Promise.resolve()
  const send = (message: HostMessage) => process.send!(message)

  process.on('disconnect', () => process.exit(0))
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'start') {
      worker = new Worker(new URL(m.file), { workerData: m.workerData, resourceLimits: m.resourceLimits })
      online = new Promise((resolve) => worker!.once('online', resolve).once('exit', resolve))
      worker.on('message', (value) => send({ type: 'message', value }))
      worker.on('error', (err: Error & { code?: string }) => send({ type: 'error', message: err.message, code: err.code }))
      // the parent hears of the end before the process goes
      worker.on('exit', (code) => process.send!({ type: 'exit', code } satisfies HostMessage, () => process.exit(0)))
    } else if (m.type === 'message') worker?.postMessage(m.value)
    else if (m.type === 'heap') {
      if (!worker) send({ type: 'heap', id: m.id, error: 'the thread has not started' })
      else {
        online
          .then(() => worker!.getHeapStatistics())
          .then(
            (info) => send({ type: 'heap', id: m.id, info }),
            (err: Error) => send({ type: 'heap', id: m.id, error: err.message }),
          )
      }
    }
  })
}
