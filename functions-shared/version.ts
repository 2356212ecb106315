import pkg from '../package.json' with { type: 'json' }

export const SERVICE_NAME = pkg.name
export const VERSION: string = pkg.version
