// A worker thread run inside a child process of its own, for the threads that read untrusted PDFs
// (pdf-isolate.ts, render-isolate.ts). A thread's heap bound (resourceLimits) is kept only as well as
// V8 can stop the thread in time (nodejs/node#47224): when one array outgrows the bound in a single
// step, V8 aborts the whole process instead of ending the thread with ERR_WORKER_OUT_OF_MEMORY. A 6 KB
// PDF of nested forms did so in about 1 reading in 30 at a 64 MB bound, taking the server with it. Here
// the thread's process is the one that ends: the caller sees the thread fail as it would have, and goes on.
//
// The class stands in for node:worker_threads' Worker as far as the isolates use it: postMessage, the
// 'message', 'error' and 'exit' events, getHeapStatistics, terminate (which ends the process at once,
// native code and all), ref and unref.
import { type ChildProcess, fork } from 'node:child_process'
import { EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { HeapInfo } from 'node:v8'
import type { ResourceLimits } from 'node:worker_threads'
import type { HostMessage, ParentMessage } from './process-worker-host.ts'

/** The end of what the process wrote on stderr that is kept, to tell why it ended. */
const STDERR_TAIL = 4096
/** What V8 writes when it aborts a process whose heap ran out. */
const OUT_OF_MEMORY = /JavaScript heap out of memory|Reached heap limit|Allocation failed/

export class ProcessWorker extends EventEmitter {
  readonly #child: ChildProcess
  #stderr = ''
  #exited = false
  #threadExited = false
  #nextHeapRequest = 0
  readonly #heapRequests = new Map<number, { resolve: (info: HeapInfo) => void; reject: (err: Error) => void }>()
  readonly #exit: Promise<number>

  constructor(file: URL, options: { workerData?: unknown; resourceLimits?: ResourceLimits } = {}) {
    super()
    // no inherited execArgv (a test runner's loaders, an inspector port): the process only hosts the thread
    this.#child = fork(new URL('./process-worker-host.ts', import.meta.url), [], {
      execArgv: [],
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    })
    this.#child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL)
    })
    this.#child.on('message', (m: HostMessage) => this.#onHostMessage(m))
    this.#exit = new Promise((resolve) => {
      const ended = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.#exited) return
        this.#exited = true
        for (const request of this.#heapRequests.values()) request.reject(new Error('the thread has ended'))
        this.#heapRequests.clear()
        if (!this.#threadExited) {
          // ended without its thread saying so: killed here, or aborted by V8 (an 'error' no one listens
          // to any more is not thrown: the page or reading it was about is settled)
          if (OUT_OF_MEMORY.test(this.#stderr) && this.listenerCount('error') > 0) {
            this.emit('error', Object.assign(new Error('the thread ran out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' }))
          }
          this.#threadExited = true
          this.emit('exit', code ?? (signal ? 1 : 0))
        }
        resolve(code ?? 1)
      }
      this.#child.on('close', ended)
      // a process that could not be started (no memory, no process slots left) is one that ended
      this.#child.on('error', () => {
        if (this.#child.pid === undefined) ended(1, null)
      })
    })
    this.#send({ type: 'start', file: file.href, workerData: options.workerData, resourceLimits: options.resourceLimits })
  }

  /** The process's id: the thread's own process. */
  get pid(): number | undefined {
    return this.#child.pid
  }

  postMessage(value: unknown): void {
    this.#send({ type: 'message', value })
  }

  getHeapStatistics(): Promise<HeapInfo> {
    if (this.#exited) return Promise.reject(new Error('the thread has ended'))
    const id = this.#nextHeapRequest++
    return new Promise((resolve, reject) => {
      this.#heapRequests.set(id, { resolve, reject })
      this.#send({ type: 'heap', id })
    })
  }

  /** Ends the process at once, whatever its thread is doing; resolves when it has ended. */
  async terminate(): Promise<number> {
    if (!this.#exited) this.#child.kill('SIGKILL')
    return this.#exit
  }

  ref(): void {
    this.#child.ref()
    this.#child.channel?.ref()
    ;(this.#child.stderr as Socket | null)?.ref()
  }

  unref(): void {
    this.#child.unref()
    this.#child.channel?.unref()
    ;(this.#child.stderr as Socket | null)?.unref()
  }

  #send(message: ParentMessage): void {
    // a process that ended meanwhile: its 'close' settles what waits on it
    if (!this.#exited && this.#child.connected) this.#child.send(message, () => {})
  }

  #onHostMessage(m: HostMessage): void {
    if (m.type === 'message') this.emit('message', m.value)
    else if (m.type === 'heap') {
      const request = this.#heapRequests.get(m.id)
      this.#heapRequests.delete(m.id)
      if (m.info) request?.resolve(m.info)
      else request?.reject(new Error(m.error ?? 'the thread has ended'))
    } else if (m.type === 'error') this.emit('error', Object.assign(new Error(m.message), { code: m.code }))
    else if (m.type === 'exit') {
      this.#threadExited = true
      this.emit('exit', m.code)
    }
  }
}
