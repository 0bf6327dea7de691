// kafkalab interop driver for kafkajs 2.2.4 transactions (run by tests/interop/test_transactions_kafkajs.py).
//
// Like driver.js: reads one JSON spec on stdin, does one scenario against a kafkalab broker, prints one line
// "KAFKALAB-REPORT {json}" with what kafkajs saw, and exits (0 = the scenario ran to its end). Values are UTF-8.
//
//   {"brokers": [...], "timeout": 5000, "client_id": "c", "action": A, ...}
//
//   "plan":    {"transactional_id": t, "plan": [["commit" | "abort", [[topic, partition, value], ...]], ...]}
//              runs the transactions in order (an aborted one is sent first, then aborted).
//   "read":    {"topics": [t, ...], "read_uncommitted": bool, "count": n, "settle_ms": ms, "max_bytes_per_partition": b}
//              a consumer (kafkajs has none without a group) reads from the beginning until "count" records
//              arrived, then "settle_ms" longer; reports every record read: [[topic, partition, value], ...].
//   "process": {"input": t, "output": t, "group": g, "transactional_id": t, "steps": [[n, "commit" | "leave"], ...]}
//              consume-process-produce: reads the group's input from its committed offset, and for each step
//              writes "out-<value>" of the next n inputs and sends the offsets in one transaction, committed or
//              left open. A step left open ends the process at once (process.exit: the crash), without EndTxn.
//   "fence":   {"topic": t, "transactional_id": t, "group": g}
//              a first producer writes "zombie-1" in a transaction, a second one with the same id commits "live",
//              then the first tries to write "zombie-2", to send offsets and to commit: reports each error's type.
//   "lso":     {"topic": t, "transaction_timeout": ms, "blocked_ms": ms}
//              a read_committed consumer reads a committed "start", then meets an open transaction ("open") followed by a committed one ("later"):
//              what it reads in "blocked_ms", then after "open" commits; then an open transaction of a producer
//              with a short transaction timeout ("expired") followed by a committed "after-expiry": what it reads,
//              and the error the timed-out producer's commit gets.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const REPORT = 'KAFKALAB-REPORT '

function readStdin () {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', c => chunks.push(c))
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

function report (body, code) {
  process.stdout.write(REPORT + JSON.stringify(body) + '\n')
  process.exitCode = code
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function errorOf (e) {
  return e ? { name: e.name, type: e.type || null, message: e.message } : null
}

// Run fn; its error (or null) as {name, type, message}.
async function caught (fn) {
  try {
    await fn()
    return null
  } catch (e) {
    return errorOf(e)
  }
}

function txnProducer (kafka, transactionalId, extra) {
  return kafka.producer(Object.assign({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
  }, extra || {}))
}

async function sendOne (txn, topic, partition, value) {
  await txn.send({ topic, messages: [{ partition, value }] })
}

// A consumer that records every record it is given, with a way to wait for a count.
async function startReader (kafka, spec, topics, readUncommitted) {
  const consumer = kafka.consumer({
    groupId: spec.group || `kafkajs-reader-${process.pid}-${Date.now()}`,
    readUncommitted,
    maxBytesPerPartition: spec.max_bytes_per_partition || undefined,
    maxBytes: spec.max_bytes_per_partition || undefined,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    maxWaitTimeInMs: 50
  })
  await consumer.connect()
  for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      got.push([topic, partition, message.value === null ? null : message.value.toString('utf8')])
    }
  })
  const waitFor = async (count, timeoutMs) => {
    const end = Date.now() + timeoutMs
    while (got.length < count) {
      if (Date.now() > end) throw new Error(`read ${JSON.stringify(got)}, expected ${count} records`)
      await sleep(10)
    }
  }
  return { consumer, got, waitFor }
}

async function plan (kafka, spec) {
  const producer = txnProducer(kafka, spec.transactional_id)
  await producer.connect()
  for (const [kind, sends] of spec.plan) {
    const txn = await producer.transaction()
    for (const [topic, partition, value] of sends) await sendOne(txn, topic, partition, value)
    if (kind === 'commit') await txn.commit()
    else await txn.abort()
  }
  await producer.disconnect()
  return {}
}

async function read (kafka, spec) {
  const reader = await startReader(kafka, spec, spec.topics, !!spec.read_uncommitted)
  try {
    await reader.waitFor(spec.count, spec.timeout * 3)
    await sleep(spec.settle_ms || 0)
  } finally {
    await reader.consumer.disconnect()
  }
  return { records: reader.got }
}

async function processInputs (kafka, spec) {
  const producer = txnProducer(kafka, spec.transactional_id)
  await producer.connect()
  // the first transaction() call sends InitProducerId: it fences a crashed instance and waits for its abort
  // (CONCURRENT_TRANSACTIONS is retried), before the consumer fetches the group's offsets
  const first = await producer.transaction()
  // a short session: the crashed instance's member is dropped soon, so the restarted one joins quickly
  const consumer = kafka.consumer({ groupId: spec.group, sessionTimeout: 1500, heartbeatInterval: 300, maxWaitTimeInMs: 50 })
  await consumer.connect()
  await consumer.subscribe({ topic: spec.input, fromBeginning: true })
  const inputs = []
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => { inputs.push({ partition, offset: message.offset, value: message.value }) }
  })
  const total = spec.steps.reduce((n, [count]) => n + count, 0)
  const end = Date.now() + spec.timeout * 3
  while (inputs.length < total) {
    if (Date.now() > end) throw new Error(`read ${inputs.length} of ${total} inputs`)
    await sleep(10)
  }
  await consumer.pause([{ topic: spec.input }])
  const done = []
  let next = 0
  let txn = first
  for (const [count, ending] of spec.steps) {
    txn = txn || await producer.transaction()
    const batch = inputs.slice(next, next + count)
    next += count
    for (const m of batch) await sendOne(txn, spec.output, 0, 'out-' + m.value.toString('utf8'))
    const last = batch[batch.length - 1]
    await txn.sendOffsets({
      consumerGroupId: spec.group,
      topics: [{ topic: spec.input, partitions: [{ partition: last.partition, offset: String(Number(last.offset) + 1) }] }]
    })
    done.push(batch.map(m => m.value.toString('utf8')))
    if (ending === 'leave') {
      report({ processed: done, crashed: true }, 0)
      process.exit(0) // the crash: no EndTxn, no LeaveGroup, sockets dropped
    }
    await txn.commit()
    txn = null
  }
  await consumer.disconnect()
  await producer.disconnect()
  return { processed: done }
}

async function fence (kafka, spec) {
  const first = txnProducer(kafka, spec.transactional_id)
  const second = txnProducer(kafka, spec.transactional_id)
  await first.connect()
  await second.connect()
  const zombie = await first.transaction()
  await sendOne(zombie, spec.topic, 0, 'zombie-1')
  const live = await second.transaction() // InitProducerId: bumps the epoch, aborts the first's transaction
  await sendOne(live, spec.topic, 0, 'live')
  await live.commit()
  const out = {
    send: await caught(() => sendOne(zombie, spec.topic, 0, 'zombie-2')),
    send_offsets: await caught(() => zombie.sendOffsets({
      consumerGroupId: spec.group, topics: [{ topic: spec.topic, partitions: [{ partition: 0, offset: '1' }] }]
    })),
    commit: await caught(() => zombie.commit())
  }
  await first.disconnect()
  await second.disconnect()
  return out
}

async function lso (kafka, spec) {
  const reader = await startReader(kafka, spec, [spec.topic], false)
  const producers = []
  try {
    const openProducer = txnProducer(kafka, `${spec.topic}-open`)
    const laterProducer = txnProducer(kafka, `${spec.topic}-later`)
    producers.push(openProducer, laterProducer)
    for (const p of producers) await p.connect()
    let later = await laterProducer.transaction() // first a committed record: the reader is fetching
    await sendOne(later, spec.topic, 0, 'start')
    await later.commit()
    await reader.waitFor(1, spec.timeout * 3)
    const start = reader.got.splice(0)
    const open = await openProducer.transaction()
    await sendOne(open, spec.topic, 0, 'open')
    later = await laterProducer.transaction()
    await sendOne(later, spec.topic, 0, 'later')
    await later.commit()
    await sleep(spec.blocked_ms)
    const blocked = reader.got.splice(0)
    await open.commit()
    await reader.waitFor(2, spec.timeout * 3)
    const afterCommit = reader.got.splice(0)

    const expiringProducer = txnProducer(kafka, `${spec.topic}-expiring`, { transactionTimeout: spec.transaction_timeout })
    producers.push(expiringProducer)
    await expiringProducer.connect()
    const expiring = await expiringProducer.transaction()
    const started = Date.now() // before AddPartitionsToTxn, where the coordinator's clock for it starts
    await sendOne(expiring, spec.topic, 0, 'expired')
    later = await laterProducer.transaction()
    await sendOne(later, spec.topic, 0, 'after-expiry')
    await later.commit()
    await reader.waitFor(1, spec.timeout * 3)
    const waitedMs = Date.now() - started
    await sleep(200) // anything more would show up here
    const afterExpiry = reader.got.splice(0)
    const expiredCommit = await caught(() => expiring.commit())
    return { start, blocked, after_commit: afterCommit, after_expiry: afterExpiry, waited_ms: waitedMs, expired_commit: expiredCommit }
  } finally {
    await reader.consumer.disconnect()
    for (const p of producers) await p.disconnect()
  }
}

async function main () {
  const spec = JSON.parse(await readStdin())
  const timeout = spec.timeout || 8000
  const logs = []
  const kafka = new Kafka({
    clientId: spec.client_id || 'kafkajs-kafkalab',
    brokers: spec.brokers,
    connectionTimeout: timeout,
    requestTimeout: timeout,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }) => {
      logs.push(`${level} ${namespace}: ${log.message}${log.error ? ' (' + log.error + ')' : ''}`)
    }
  })
  const actions = { plan, read, process: processInputs, fence, lso }
  let body
  let code = 0
  try {
    body = await actions[spec.action](kafka, spec)
  } catch (e) {
    body = { error: `${e.name}: ${e.message}` }
    code = 1
  }
  body.logs = logs
  report(body, code)
  process.exit(code) // a consumer left running after an error would keep node alive
}

main()
