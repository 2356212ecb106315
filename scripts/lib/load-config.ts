// Settings for a Node entry point: .env if present, then the environment; a bad setting ends the
// process with exit code 2 and a message naming it. Without JWT_SECRET in either, the secret is the data
// folder's (jwt-secret.ts) once a stack has started there.
import { existsSync } from 'node:fs'
import { type Config, ConfigError, loadConfig } from '../../functions-shared/config.ts'
import { folderJwtSecret } from './jwt-secret.ts'

export function loadConfigOrExit(program: string): Config {
  if (existsSync('.env')) process.loadEnvFile('.env')
  try {
    const config = loadConfig(process.env)
    if (process.env.JWT_SECRET !== undefined) return config
    const secret = folderJwtSecret(config.DATA_DIR, { create: false })
    return secret ? loadConfig({ ...process.env, JWT_SECRET: secret }) : config
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`${program}: ${err.message}`)
      process.exit(2)
    }
    throw err
  }
}

/** Whether the settings name a JWT secret (.env or the environment), or leave it to the data folder. */
export const jwtSecretGiven = () => process.env.JWT_SECRET !== undefined
