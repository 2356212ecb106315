// The machine a benchmark ran on, in one line that every benchmark prints before its figures: the CPU
// model, the cores this process may use, the memory, Node's version and, when given, the database (the
// embedded PGlite, or a PostgreSQL server with its server_version). Absolute figures move with the
// machine; this line says which machine a run's figures belong to.
import { availableParallelism, cpus, totalmem } from 'node:os'

/** Prints and returns `machine: <CPU model>, <n> cores, <memory> GiB, Node <version>[, <database>]`. */
export function machine(database?: string): string {
  const model = cpus()[0]?.model.trim().replace(/\s+/g, ' ') || 'unknown CPU'
  const parts = [model, `${availableParallelism()} cores`, `${(totalmem() / 2 ** 30).toFixed(1)} GiB`, `Node ${process.version}`]
  if (database) parts.push(database)
  const line = `machine: ${parts.join(', ')}`
  console.log(line)
  return line
}
