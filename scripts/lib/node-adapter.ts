// What the runtime-neutral app needs from Node: the socket peer address and installed package files.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join, normalize } from 'node:path'
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'
import type { AssetReader } from '../../functions-shared/deps.ts'

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
