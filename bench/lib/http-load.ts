// deno-lint-ignore-file no-explicit-any -- the API's JSON, read field by field
// An HTTP load generator in a worker thread, so the client's own work (fetch, JSON) does not share the
// server's event loop: `concurrency` loops send `total` requests in turn over the given request bodies
// and report each latency. Used by the benchmarks; prints nothing itself.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'

export interface LoadPlan {
  url: string
  concurrency: number
  total: number
  /** request i uses requests[i % length]; worker w uses headers[w % length] */
  bodies: unknown[]
  headers: Record<string, string>[]
  /** a numeric field of the JSON answer to collect (e.g. a timing), by path: `a.b`, or `a/b.c` when a key holds dots */
  collect?: string[]
}

export interface LoadResult {
  latencies: number[]
  collected: number[][]
  seconds: number
  failures: string[]
}

async function run(plan: LoadPlan): Promise<LoadResult> {
  const latencies: number[] = []
  const collected: number[][] = (plan.collect ?? []).map(() => [])
  const failures: string[] = []
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: plan.concurrency }, async (_, worker) => {
      for (let i = next++; i < plan.total; i = next++) {
        const t0 = performance.now()
        const res = await fetch(plan.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...plan.headers[worker % plan.headers.length] },
          body: JSON.stringify(plan.bodies[i % plan.bodies.length]),
        })
        const body = (await res.json()) as Record<string, any>
        latencies.push(performance.now() - t0)
        if (res.status !== 200) failures.push(`${res.status} ${JSON.stringify(body).slice(0, 200)}`)
        for (const [j, path] of (plan.collect ?? []).entries()) {
          const value = path.split(path.includes('/') ? '/' : '.').reduce<any>((o, k) => o?.[k], body)
          if (typeof value === 'number') collected[j]!.push(value)
        }
      }
    }),
  )
  return { latencies, collected, seconds: (performance.now() - started) / 1000, failures }
}

export function runLoad(plan: LoadPlan): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: plan })
    worker.once('message', (r: LoadResult) => {
      resolve(r)
      void worker.terminate()
    })
    worker.once('error', reject)
  })
}

if (!isMainThread && parentPort) parentPort.postMessage(await run(workerData as LoadPlan))
