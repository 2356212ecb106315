// What the runtime-neutral app needs from Node: the socket peer address and installed package files.
import { readFile } from 'node:fs/promises'
import { lookup } from 'node:dns/promises'
import { createRequire } from 'node:module'
import { dirname, join, normalize } from 'node:path'
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'
import type { AssetReader } from '../../functions-shared/deps.ts'
import type { Resolver } from '../../functions-shared/net/safe-fetch.ts'
import { parseSources, type Source } from '../../functions-shared/sources-file.ts'

const require = createRequire(import.meta.url)

export const readAssetNode: AssetReader = async (pkg, file) => {
  if (file.includes('..') || file.startsWith('/')) return null
  try {
    const dir = dirname(require.resolve(`${pkg}/package.json`))
    return new Uint8Array(await readFile(normalize(join(dir, file))))
  } catch {
    return null
  }
}

export function remoteAddressNode(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address
  } catch {
    return undefined // app.request() in tests has no socket
  }
}

export const resolveHostNode: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address)

/**
 * The scraper sources file; a missing or invalid file stops the start with a message naming it.
 * `${NAME}` in a source is replaced by `vars.NAME` (the local stack passes PUBLIC_URL and PUBLIC_HOST,
 * which the demo source uses); a source naming another variable is left out, with a warning.
 */
export async function readSourcesNode(path: string, vars: Record<string, string> = {}, warn: (message: string) => void = () => {}): Promise<Source[]> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new Error(`cannot read SCRAPER_SOURCES_FILE ${path}: ${(err as Error).message}`)
  }
  try {
    return parseSources(text, vars, (name, reason) => warn(`scraper source ${name} left out: ${reason}`))
  } catch (err) {
    throw new Error(`invalid SCRAPER_SOURCES_FILE ${path}: ${(err as Error).message}`)
  }
}
