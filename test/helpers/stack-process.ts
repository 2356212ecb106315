// `npm start` as a real process (node scripts/start.ts), ready once it prints its URLs.
import { type ChildProcess, spawn } from 'node:child_process'

const root = new URL('../..', import.meta.url).pathname
const node = `${root}node_modules/.bin/node`

export interface StackProcess {
  child: ChildProcess
  /** what it printed so far, stdout and stderr */
  output(): string
  /** the value of a line of its banner ("API URL", "anon key"...), '' when absent */
  line(label: string): string
}

/** Starts the stack with only these settings (and PATH, HOME, PORT=0, DB_PORT=0); rejects if it exits or is not ready in time. */
// a first start makes the demo portal's 29 PDFs: seconds alone, over a minute beside the rest of the suite
export async function startStackProcess(env: Record<string, string>, timeoutMs = 150_000): Promise<StackProcess> {
  const child = spawn(node, ['scripts/start.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', DB_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (d) => (output += d))
  child.stderr!.on('data', (d) => (output += d))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within ${timeoutMs / 1000} s: ${output}`)), timeoutMs)
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)))
    child.stdout!.on('data', () => {
      if (output.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  return { child, output: () => output, line: (label) => new RegExp(`^\\s+${label}\\s+(\\S+)$`, 'm').exec(output)?.[1] ?? '' }
}
