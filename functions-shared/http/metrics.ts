// Prometheus metrics. Each capability registers its own series on the same registry.
import { Counter, Histogram, Registry } from 'prom-client'

export interface Metrics {
  registry: Registry
  observeRequest(method: string, route: string, status: number, seconds: number): void
}

export function createMetrics(): Metrics {
  const registry = new Registry()
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  })
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const labels = { method, route, status: String(status) }
      requests.inc(labels)
      latency.observe(labels, seconds)
    },
  }
}
