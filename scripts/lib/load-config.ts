// Settings for a Node entry point: .env if present, then the environment; a bad setting ends the
// process with exit code 2 and a message naming it.
import { existsSync } from 'node:fs'
import { ConfigError, loadConfig, type Config } from '../../functions-shared/config.ts'

export function loadConfigOrExit(program: string): Config {
  if (existsSync('.env')) process.loadEnvFile('.env')
  try {
    return loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`${program}: ${err.message}`)
      process.exit(2)
    }
    throw err
  }
}
