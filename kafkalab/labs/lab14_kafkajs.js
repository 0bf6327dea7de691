// Lab 14's job for kafkajs (run by kafkalab.labs.lab14 with Node; kafkajs from the repository's node_modules).
//
// Reads {"brokers": [...], "topic": t, "group": g, "client_id": c, "records": [[key, value], ...],
// "partitions": n} on stdin; creates the topic, produces the records in one send(), consumes them in the group,
// commits, and prints one line "KAFKALAB-REPORT {json}" with what kafkajs saw.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

function readStdin () {
  return new Promise((resolve, reject) => {
    const chunks = []
    process.stdin.on('data', c => chunks.push(c))
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    process.stdin.on('error', reject)
  })
}

async function main () {
  const spec = JSON.parse(await readStdin())
  const kafka = new Kafka({ clientId: spec.client_id, brokers: spec.brokers, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: spec.topic, numPartitions: spec.partitions, replicationFactor: spec.replication_factor }]
  })
  await admin.disconnect()

  const producer = kafka.producer()
  await producer.connect()
  const acks = await producer.send({
    topic: spec.topic,
    acks: -1,
    messages: spec.records.map(([key, value]) => ({ key, value }))
  })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId: spec.group, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic: spec.topic, fromBeginning: true })
  let seen = 0
  const next = new Map()   // partition -> the offset after the last record read: what the group commits
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${seen} of ${spec.records.length} records`)), 30000)
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        for (const m of batch.messages) {
          resolveOffset(m.offset)
          next.set(batch.partition, (BigInt(m.offset) + 1n).toString())
          seen++
        }
        if (seen >= spec.records.length) { clearTimeout(timer); resolve() }
      }
    })
  })
  await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic: spec.topic, partition, offset })))
  await consumer.disconnect()
  console.log('KAFKALAB-REPORT ' + JSON.stringify({ consumed: seen, partitions_acked: acks.length }))
}

main().then(() => process.exit(0), e => { console.log('KAFKALAB-REPORT ' + JSON.stringify({ error: String(e) })); process.exit(1) })
