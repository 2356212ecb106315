import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = new URL('..', import.meta.url).pathname

describe('TypeScript', () => {
  it('compiles in strict mode (tsc --noEmit)', async () => {
    const result = await promisify(execFile)(`${root}node_modules/.bin/tsc`, ['--noEmit', '-p', root], { cwd: root }).catch((e: { stdout: string }) => e)
    expect(result.stdout).toBe('')
  }, 120_000)
})
