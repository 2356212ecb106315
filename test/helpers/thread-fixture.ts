// A worker thread for test/process-worker.test.ts: echoes what it is sent with its workerData, grows one
// array by `push` until its heap is gone, or spins without ever giving its event loop a turn.
import { parentPort, workerData } from 'node:worker_threads'

parentPort!.on('message', (m: { op: 'echo'; value: unknown } | { op: 'push'; count: number } | { op: 'spin' }) => {
  if (m.op === 'echo') parentPort!.postMessage({ value: m.value, workerData })
  else if (m.op === 'push') {
    const values: number[] = []
    for (let i = 0; i < m.count; i++) values.push(i)
    parentPort!.postMessage({ length: values.length })
  } else for (;;);
})
