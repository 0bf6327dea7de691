// kafkalab interop driver for kafkajs 2.2.4 (run by tests/interop/test_broker_kafkajs.py).
//
// Reads one JSON spec on stdin, does one thing with kafkajs against a kafkalab broker, prints one line
// "KAFKALAB-REPORT {json}" with what kafkajs believes happened, and exits (0 = the action completed).
//
//   {"brokers": ["127.0.0.1:9092"], "action": "metadata" | "produce" | "offsets" | "consume",
//    "topic": "t", "timeout": 8000,
//    "produce": {"idempotent": true, "acks": -1, "compression": "none" | "gzip",
//                "records": [{"partition": 0, "key": b64|null, "value": b64|null,
//                             "headers": [[name, b64]], "timestamp": ms}]},
//    "offsets": {"timestamp": ms},
//    "consume": {"group": "g", "count": 12},
//    "ssl": {"ca": "ca.pem", "cert": "client.pem", "key": "client.key"}}   (optional: TLS, cert/key for mTLS)
//
// Keys, values and header values travel base64-encoded so that any bytes survive the JSON.
// An optional "sasl": {"mechanism": "plain" | "scram-sha-256" | "scram-sha-512", "username": u, "password": p}
// logs in with SASL (kafkajs' own "sasl" option).
// kafkajs has no consumer without a group (Consumer requires a groupId and joins it): "consume" joins the
// group, reads "count" records from the beginning, commits and leaves.
'use strict'

const fs = require('fs')
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

// kafkajs' "ssl" option (Node's tls.connect options) from the spec's PEM file names
function tlsOptions (ssl) {
  if (!ssl) return undefined
  const options = { ca: [fs.readFileSync(ssl.ca, 'utf-8')] }
  if (ssl.cert) options.cert = fs.readFileSync(ssl.cert, 'utf-8')
  if (ssl.key) options.key = fs.readFileSync(ssl.key, 'utf-8')
  return options
}

const REPORT = 'KAFKALAB-REPORT '

function readStdin () {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', c => chunks.push(c))
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

const b64 = s => (s === null || s === undefined ? null : Buffer.from(s, 'base64'))

function headersOf (pairs) {
  // Repeated header names become an array: kafkajs writes one record header per element, in order.
  const out = {}
  for (const [name, value] of pairs || []) {
    const v = b64(value)
    if (name in out) {
      out[name] = [].concat(out[name], [v])
    } else {
      out[name] = v
    }
  }
  return out
}

async function produce (kafka, spec) {
  const p = spec.produce
  const idempotent = !!p.idempotent
  const producer = kafka.producer({
    idempotent,
    maxInFlightRequests: idempotent ? 1 : undefined,
    allowAutoTopicCreation: true,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
  })
  await producer.connect()
  const byPartition = new Map()
  for (const r of p.records) {
    if (!byPartition.has(r.partition)) byPartition.set(r.partition, [])
    byPartition.get(r.partition).push({
      partition: r.partition,
      key: b64(r.key),
      value: b64(r.value),
      headers: headersOf(r.headers),
      timestamp: String(r.timestamp)
    })
  }
  const compression = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }[p.compression || 'none']
  // One send() per call keeps each partition's records in one batch, in order.
  const acks = p.acks === undefined ? -1 : p.acks
  const result = await producer.send({
    topic: spec.topic,
    acks,
    timeout: spec.timeout,
    compression,
    messages: [].concat(...byPartition.values())
  })
  await producer.disconnect()
  return { acks: result.map(r => ({ partition: r.partition, error_code: r.errorCode, base_offset: r.baseOffset })) }
}

async function offsets (kafka, spec) {
  const admin = kafka.admin()
  await admin.connect()
  const latest = await admin.fetchTopicOffsets(spec.topic)
  const out = { offsets: latest.map(o => ({ partition: o.partition, low: o.low, high: o.high, offset: o.offset })) }
  if (spec.offsets && spec.offsets.timestamp !== undefined) {
    const byTime = await admin.fetchTopicOffsetsByTimestamp(spec.topic, spec.offsets.timestamp)
    out.by_timestamp = byTime.map(o => ({ partition: o.partition, offset: o.offset }))
  }
  await admin.disconnect()
  return out
}

async function metadata (kafka, spec) {
  const admin = kafka.admin()
  await admin.connect()
  const md = await admin.fetchTopicMetadata({ topics: [spec.topic] })
  const cluster = await admin.describeCluster().catch(e => ({ error: String(e) }))
  await admin.disconnect()
  return {
    topics: md.topics.map(t => ({
      name: t.name,
      partitions: t.partitions.map(p => ({
        partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr
      }))
    })),
    brokers: cluster.brokers ? cluster.brokers.map(b => ({ node_id: b.nodeId, host: b.host, port: b.port })) : null,
    controller: cluster.controller === undefined ? null : cluster.controller
  }
}

async function consume (kafka, spec) {
  const c = spec.consume
  const consumer = kafka.consumer({ groupId: c.group, sessionTimeout: 6000, heartbeatInterval: 200, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic: spec.topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${got.length} of ${c.count} records`)), spec.timeout * 3)
    consumer.run({
      autoCommit: true,
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, offset: message.offset, value: message.value === null ? null : message.value.toString('base64') })
        if (got.length >= c.count) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return { records: got }
}

async function main () {
  const spec = JSON.parse(await readStdin())
  const timeout = spec.timeout || 8000
  const logs = []
  const kafka = new Kafka({
    clientId: spec.client_id || 'kafkajs-kafkalab',
    brokers: spec.brokers,
    ssl: tlsOptions(spec.ssl),
    connectionTimeout: timeout,
    requestTimeout: timeout,
    sasl: spec.sasl || undefined,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }) => {
      logs.push(`${level} ${namespace}: ${log.message}${log.error ? ' (' + log.error + ')' : ''}`)
    }
  })
  const actions = { produce, offsets, metadata, consume }
  let report
  let code = 0
  try {
    report = await actions[spec.action](kafka, spec)
  } catch (e) {
    report = { error: `${e.name}: ${e.message}` }
    code = 1
  }
  report.logs = logs
  process.stdout.write(REPORT + JSON.stringify(report) + '\n')
  process.exitCode = code
}

main()
