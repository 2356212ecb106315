import { readdirSync, readFileSync } from 'node:fs'

/** The processes this one started to host a PDF thread (scripts/lib/process-worker.ts), on Linux. */
export const threadHosts = (): number[] =>
  readdirSync(`/proc/${process.pid}/task`)
    .flatMap((task) => readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('process-worker-host')
      } catch {
        return false // ended meanwhile
      }
    })

/** The first such process, once there is one (looked for every 10 ms, for 10 s at most). */
export async function threadHost(): Promise<number | undefined> {
  const until = performance.now() + 10_000
  for (;;) {
    const [pid] = threadHosts()
    if (pid || performance.now() > until) return pid
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Whether process `pid` is still there (a process ended and reaped is not). */
export const alive = (pid: number | undefined): boolean => {
  try {
    process.kill(pid!, 0)
    return true
  } catch {
    return false
  }
}
