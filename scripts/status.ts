// `npm run status`: what an app needs to talk to the running local stack (as `supabase status`): the API
// URL for createClient, the functions URL, the database URL and the keys. `-o env` prints .env lines
// (SUPABASE_URL=…, SUPABASE_ANON_KEY=…), `-o json` an object. Exit code 1, with the values still
// printed, when nothing answers at the API URL.
import { parseArgs } from 'node:util'
import { loadConfigOrExit } from './lib/load-config.ts'
import { extraRows, keyMismatch, stackStatus, statusEnv, statusLines } from './lib/status.ts'
import { DEMO_PORTAL_BASE } from './lib/demo-portal.ts'

const { values } = parseArgs({ options: { output: { type: 'string', short: 'o', default: 'pretty' } }, allowPositionals: false })
if (!['pretty', 'env', 'json'].includes(values.output)) {
  console.error('npm run status: -o takes pretty, env or json')
  process.exit(2)
}
const config = loadConfigOrExit('npm run status')
const status = await stackStatus(config)
const running = await fetch(`${status.functions_url}/health`, { signal: AbortSignal.timeout(3000) }).then(
  (r) => r.ok,
  () => false,
)
// keys the running stack refuses (it was started with another DATA_DIR) are no keys to print as its own
const mismatch = running ? await keyMismatch(status.api_url, status.service_role_key) : null
if (values.output === 'env') process.stdout.write(`${statusEnv(status)}\n`)
else if (values.output === 'json') {
  process.stdout.write(`${JSON.stringify({ running, keys_accepted: running ? mismatch === null : null, ...status }, null, 2)}\n`)
} else {process.stdout.write(
    `curriculum-tutor ${running ? 'is running' : 'is not running'}\n\n${statusLines(status, running ? await extraRows(status, DEMO_PORTAL_BASE) : [])}\n`,
  )}
if (!running) {
  console.error(`nothing answers at ${status.api_url} (start the stack with npm start; PORT, HOST and PUBLIC_URL say where it listens)`)
  process.exit(1)
}
if (mismatch) {
  console.error(mismatch)
  process.exit(1)
}
