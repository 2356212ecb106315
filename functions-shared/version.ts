// The service's name and version, from package.json (the health route and the User-Agent of downloads say them).
import pkg from '../package.json' with { type: 'json' }

export const SERVICE_NAME = pkg.name
export const VERSION: string = pkg.version
