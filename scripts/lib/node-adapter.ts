// What the runtime-neutral app needs from Node: the socket peer address, installed package files, DNS
// lookups and the download guard's connections.
import { readFile } from 'node:fs/promises'
import { lookup } from 'node:dns/promises'
import type { LookupAddress, LookupOptions } from 'node:dns'
import { isIP } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join, normalize } from 'node:path'
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'
import type { AssetReader } from '../../functions-shared/deps.ts'
import { Agent, fetch as undiciFetch } from 'undici'
import type { ConnectGuard, Resolver } from '../../functions-shared/net/safe-fetch.ts'
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

type LookupCallback = (err: Error | null, address: string | LookupAddress[], family?: number) => void

/**
 * The download guard's connections on Node: an undici Agent whose sockets look names up through the
 * guard's lookup (which resolves and checks), so a socket connects only to an address just checked.
 */
export const connectGuardNode: ConnectGuard = (resolve) => {
  const guardedLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    resolve(hostname).then(
      (addresses) => {
        const found = addresses.map((address) => ({ address, family: isIP(address) }))
        if (options.all) callback(null, found)
        else callback(null, found[0]!.address, found[0]!.family)
      },
      (err: Error) => callback(err, []),
    )
  }
  const agent = new Agent({ connect: { lookup: guardedLookup as never } })
  return {
    fetch: ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
    close: () => agent.destroy(),
  }
}

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
