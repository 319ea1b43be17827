#!/usr/bin/env node
// kafkajs with @kafkajs/confluent-schema-registry against kbroker's schema registry, for
// tests/schema_registry/test_kafkajs.py.
//
// Input (stdin, JSON): {"registry": URL, "brokers": "host:port", "schema": Avro schema text,
//   "auto": {"subject", "topic", "values": [...]},   registered by the package's register()
//   "manual": {"subject", "topic", "count"},         registered by the test over HTTP, records
//                                                    produced by confluent-kafka's serializer
//   "missing": subject}
// Output (stdout): one JSON object with what each step saw; the test asserts on it. A step that
// throws ends the program with {"error": ..., "step": ...} and exit status 1.
'use strict'

const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType, COMPATIBILITY } = require('@kafkajs/confluent-schema-registry')

async function readStdin () {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  return JSON.parse(Buffer.concat(chunks).toString('utf8'))
}

// Consume `count` records of `topic` from the start; resolves with their values (Buffers).
async function consume (kafka, topic, count) {
  const consumer = kafka.consumer({ groupId: `sr-kafkajs-${topic}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value)
        if (values.length === count) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return values
}

async function main () {
  const input = await readStdin()
  const out = {}
  let step = 'start'
  try {
    const registry = new SchemaRegistry({ host: input.registry })
    const kafka = new Kafka({ clientId: 'sr-kafkajs', brokers: [input.brokers], logLevel: logLevel.NOTHING })

    // Registered by the package: register() asks GET /config/{subject} (404 on a new subject),
    // registers, then sets the subject's level because updateConfig is on.
    step = 'register'
    const auto = input.auto
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: input.schema },
      { subject: auto.subject, compatibility: COMPATIBILITY.FULL, updateConfig: true })
    out.auto_id = id
    step = 'register_again'
    out.auto_id_again = (await registry.register({ type: SchemaType.AVRO, schema: input.schema },
      { subject: auto.subject, compatibility: COMPATIBILITY.FULL })).id
    step = 'encode'
    const producer = kafka.producer({ allowAutoTopicCreation: true })
    await producer.connect()
    const messages = []
    for (const value of auto.values) messages.push({ value: await registry.encode(id, value) })
    step = 'produce'
    await producer.send({ topic: auto.topic, messages })
    await producer.disconnect()
    step = 'consume_auto'
    const decoded = []
    const headers = []
    for (const value of await consume(kafka, auto.topic, auto.values.length)) {
      headers.push(value.subarray(0, 5).toString('hex'))
      // a fresh client: the schema is fetched by id from kbroker, not taken from the cache
      decoded.push(await new SchemaRegistry({ host: input.registry }).decode(value))
    }
    out.auto_decoded = decoded
    out.auto_headers = headers

    // Registered by hand (the test POSTed the schema); the package finds the id.
    step = 'latest_id'
    const manual = input.manual
    out.manual_latest_id = await registry.getLatestSchemaId(manual.subject)
    step = 'id_by_schema'
    out.manual_id_by_schema = await registry.getRegistryIdBySchema(manual.subject,
      { type: SchemaType.AVRO, schema: input.schema })
    step = 'version_id'
    out.manual_version_id = await registry.getRegistryId(manual.subject, 1)
    step = 'consume_manual'
    out.manual_decoded = []
    for (const value of await consume(kafka, manual.topic, manual.count)) {
      out.manual_decoded.push(await registry.decode(value))
    }

    step = 'missing'
    try {
      await registry.getLatestSchemaId(input.missing)
      out.missing = null
    } catch (e) {
      out.missing = { status: e.status ?? null, message: String(e.message) }
    }
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e && e.stack ? e.stack : e), step, partial: out }) + '\n')
    process.exit(1)
  }
  process.stdout.write(JSON.stringify(out) + '\n')
  process.exit(0)
}

main()
