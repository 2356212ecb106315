// The worker thread in a process of its own that the PDF isolates read with (scripts/lib/process-worker.ts).
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { ProcessWorker } from '../scripts/lib/process-worker.ts'

const fixture = new URL('./helpers/thread-fixture.ts', import.meta.url)
/** Whether process `pid` runs (a zombie, ended but not yet collected, does not). */
const alive = (pid: number) => {
  try {
    return existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

/** Resolves once `pid` has ended, checking every 20 ms for at most `ms`. */
async function ended(pid: number, ms = 10_000): Promise<boolean> {
  const until = performance.now() + ms
  while (performance.now() < until) {
    if (!alive(pid)) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

describe('ProcessWorker', () => {
  it('passes messages both ways, with the workerData and the heap statistics of its thread', async () => {
    const worker = new ProcessWorker(fixture, { workerData: { pdf: new Uint8Array([1, 2, 3]) }, resourceLimits: { maxOldGenerationSizeMb: 64 } })
    try {
      worker.postMessage({ op: 'echo', value: { bytes: new Uint8Array([9, 8]), text: 'حركة المرابطين' } })
      const [reply] = await once(worker, 'message')
      expect(reply).toEqual({ value: { bytes: new Uint8Array([9, 8]), text: 'حركة المرابطين' }, workerData: { pdf: new Uint8Array([1, 2, 3]) } })
      const heap = await worker.getHeapStatistics()
      // the thread's own bound (64 MB of old generation, 256 MB in all), not a process's (4 GB here)
      expect(heap.heap_size_limit).toBeLessThan(512 * 1024 * 1024)
      expect(heap.used_heap_size).toBeGreaterThan(0)
    } finally {
      await worker.terminate()
    }
  })

  it('a thread whose one array outgrows its heap ends with ERR_WORKER_OUT_OF_MEMORY, and the caller goes on', async () => {
    // as a plain worker thread this aborts the whole process every time (FATAL ERROR: Reached heap limit)
    const worker = new ProcessWorker(fixture, { resourceLimits: { maxOldGenerationSizeMb: 64 } })
    const events: string[] = []
    const errors: (Error & { code?: string })[] = []
    const exit = new Promise((resolve) => worker.on('error', (err) => (events.push('error'), errors.push(err))).on('exit', () => resolve(events.push('exit'))))
    worker.postMessage({ op: 'push', count: 100_000_000 })
    await exit
    expect(events).toEqual(['error', 'exit'])
    expect(errors[0]!.code).toBe('ERR_WORKER_OUT_OF_MEMORY')
    expect(alive(worker.pid!)).toBe(false)
    // and a thread that fits goes on as before
    const next = new ProcessWorker(fixture, { resourceLimits: { maxOldGenerationSizeMb: 64 } })
    try {
      next.postMessage({ op: 'push', count: 1000 })
      expect((await once(next, 'message'))[0]).toEqual({ length: 1000 })
    } finally {
      await next.terminate()
    }
  }, 30_000)

  it('terminate ends the process at once, while its thread never gives its event loop a turn', async () => {
    const worker = new ProcessWorker(fixture)
    worker.postMessage({ op: 'spin' })
    // a spinning thread still answers for its heap, as a plain worker thread does: the render isolate's
    // look at memory outside the heap depends on it
    expect((await worker.getHeapStatistics()).used_heap_size).toBeGreaterThan(0)
    const exit = once(worker, 'exit')
    await worker.terminate()
    await exit
    expect(alive(worker.pid!)).toBe(false)
    await expect(worker.getHeapStatistics()).rejects.toThrow('the thread has ended')
  })

  it('an unreferenced worker keeps no process alive, and its process ends with the one that started it', async () => {
    const script = `
      import { ProcessWorker } from ${JSON.stringify(new URL('../scripts/lib/process-worker.ts', import.meta.url).href)}
      const worker = new ProcessWorker(new URL(${JSON.stringify(fixture.href)}))
      worker.postMessage({ op: 'echo', value: 1 })
      worker.once('message', () => { console.log(worker.pid); worker.unref() })`
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    parent.stdout.on('data', (chunk) => (out += chunk))
    const [code] = await once(parent, 'exit')
    expect(code).toBe(0)
    const pid = Number(out.trim())
    expect(pid).toBeGreaterThan(0)
    expect(await ended(pid)).toBe(true)
  }, 30_000)
})
