#!/usr/bin/env node
// kafkajs driver for kbroker's compat suite (compat_tests/test_kafkajs.py).
//
// Input (stdin): {"brokers": "host:port", "ops": [{"op": "<name>", ...}, ...], "security": {...}}
// ("security" is optional: {"ca": PEM, "mechanism": "SCRAM-SHA-512", "username", "password"})
// Output (stdout): one JSON array, one entry per op: {"ok": <result>} or
// {"error": {"name", "type", "code", "message", "retriable", "errors"}}. The ops run in order
// on one kafkajs client; an op that throws does not stop the ones after it. Exit status is 0
// unless the input is unreadable. kafkajs's own log goes to stderr (KAFKAJS_LOG=debug|info|warn).
//
// Values: keys, values and header values are UTF-8 strings (null for none); timestamps are
// milliseconds as strings, as kafkajs uses them.
'use strict'

const { Kafka, logLevel, CompressionTypes, CompressionCodecs, ConfigResourceTypes } = require('kafkajs')
const snappy = require('snappyjs')
const lz4 = require('lz4js')
const lz4xxh = require('lz4js/xxh32.js')
const zstd = require('@bokuweb/zstd-wasm')

// --- compression codecs (kafkajs ships gzip only; these adapt pure-JS/wasm libraries) -------

// Snappy as the Java client writes it: xerial framing (magic, version, compatible version,
// then length-prefixed raw snappy chunks). Reading accepts framed and raw snappy.
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const XERIAL_BLOCK = 32 * 1024
const snappyCodec = {
  async compress (encoder) {
    const input = encoder.buffer
    const parts = [XERIAL_MAGIC, Buffer.from([0, 0, 0, 1, 0, 0, 0, 1])]
    for (let pos = 0; pos < input.length; pos += XERIAL_BLOCK) {
      const chunk = Buffer.from(snappy.compress(input.subarray(pos, pos + XERIAL_BLOCK)))
      const len = Buffer.alloc(4)
      len.writeUInt32BE(chunk.length)
      parts.push(len, chunk)
    }
    return Buffer.concat(parts)
  },
  async decompress (buffer) {
    if (buffer.length >= 16 && buffer.subarray(0, 8).equals(XERIAL_MAGIC)) {
      const out = []
      let pos = 16
      while (pos < buffer.length) {
        const len = buffer.readUInt32BE(pos)
        pos += 4
        out.push(Buffer.from(snappy.uncompress(buffer.subarray(pos, pos + len))))
        pos += len
      }
      return Buffer.concat(out)
    }
    return Buffer.from(snappy.uncompress(buffer))
  }
}

// LZ4 frames as Kafka's Java client writes them: independent 64 KiB blocks (the broker
// rejects frames without the block-independence flag, which lz4js's own framing leaves out).
const LZ4_BLOCK = 64 * 1024
function lz4Frame (input) {
  const header = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0])
  header[6] = (lz4xxh.hash(0, header, 4, 2) >> 8) & 0xff
  const parts = [header]
  for (let pos = 0; pos < input.length; pos += LZ4_BLOCK) {
    const block = input.subarray(pos, Math.min(pos + LZ4_BLOCK, input.length))
    const dst = Buffer.alloc(lz4.compressBound(block.length))
    const size = lz4.compressBlock(block, dst, 0, block.length, new Uint32Array(1 << 16))
    const len = Buffer.alloc(4)
    if (size === 0 || size >= block.length) {
      len.writeUInt32LE((0x80000000 | block.length) >>> 0)
      parts.push(len, Buffer.from(block))
    } else {
      len.writeUInt32LE(size)
      parts.push(len, dst.subarray(0, size))
    }
  }
  parts.push(Buffer.alloc(4)) // end mark
  return Buffer.concat(parts)
}

const lz4Codec = {
  async compress (encoder) { return lz4Frame(encoder.buffer) },
  async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) }
}

let zstdReady = null
const zstdCodec = {
  async compress (encoder) {
    await (zstdReady = zstdReady || zstd.init())
    return Buffer.from(zstd.compress(encoder.buffer, 3))
  },
  async decompress (buffer) {
    await (zstdReady = zstdReady || zstd.init())
    return Buffer.from(zstd.decompress(buffer))
  }
}

CompressionCodecs[CompressionTypes.Snappy] = () => snappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => lz4Codec
CompressionCodecs[CompressionTypes.ZSTD] = () => zstdCodec

const CODECS = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD
}

// --- helpers ---------------------------------------------------------------------------------

function logCreator () {
  return ({ namespace, level, log }) => {
    const { message, ...extra } = log
    process.stderr.write(`[${namespace}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

function logLevelFromEnv () {
  const map = { debug: logLevel.DEBUG, info: logLevel.INFO, warn: logLevel.WARN, error: logLevel.ERROR }
  return map[(process.env.KAFKAJS_LOG || '').toLowerCase()] ?? logLevel.NOTHING
}

function describeError (e) {
  const out = {
    name: e && e.name,
    type: e && e.type,
    code: e && e.code,
    message: e && e.message,
    retriable: e && e.retriable
  }
  const nested = (e && (e.errors || (e.originalError && [e.originalError]))) || []
  if (Array.isArray(nested) && nested.length) out.errors = nested.map(describeError)
  if (e && e.cause) out.cause = describeError(e.cause)
  if (e && Array.isArray(e.partitions)) {
    out.partitions = e.partitions.map((p) => ({ partition: p.partition, error: describeError(p.error) }))
    out.errors = (out.errors || []).concat(out.partitions.map((p) => p.error))
  }
  return out
}

const str = (b) => (b === null || b === undefined ? null : b.toString('utf8'))

function recordOut (topic, partition, message) {
  const headers = []
  for (const [k, v] of Object.entries(message.headers || {})) {
    for (const one of Array.isArray(v) ? v : [v]) headers.push([k, str(one)])
  }
  return {
    topic,
    partition,
    offset: Number(message.offset),
    key: str(message.key),
    value: str(message.value),
    headers,
    timestamp: Number(message.timestamp)
  }
}

function messagesIn (messages) {
  return (messages || []).map((m) => {
    const out = { key: m.key ?? null, value: m.value ?? null }
    if (m.headers) {
      out.headers = {}
      for (const [k, v] of m.headers) {
        if (out.headers[k] === undefined) out.headers[k] = v
        else out.headers[k] = [].concat(out.headers[k], v)
      }
    }
    if (m.timestamp !== undefined) out.timestamp = String(m.timestamp)
    if (m.partition !== undefined) out.partition = m.partition
    return out
  })
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// read() again every 100 ms until done(value), for up to ms (20 s); the last value either
// way, for the test's assertions (kbroker shows its own writes at once: one read there)
async function readUntil (read, done, ms) {
  const deadline = Date.now() + (ms ?? 20000)
  for (;;) {
    const value = await read()
    if (done(value) || Date.now() > deadline) return value
    await sleep(100)
  }
}

// --- ops -------------------------------------------------------------------------------------

class Driver {
  constructor (brokers, security) {
    // security (optional): {ca: PEM, mechanism: 'SCRAM-SHA-512', username, password}
    const secure = {}
    if (security && security.ca) secure.ssl = { ca: [security.ca] }
    if (security && security.mechanism) {
      secure.sasl = { mechanism: security.mechanism.toLowerCase(), username: security.username,
        password: security.password }
    }
    this.kafka = new Kafka({
      ...secure,
      clientId: 'compat-kafkajs',
      brokers: brokers.split(','),
      logLevel: logLevelFromEnv(),
      logCreator,
      connectionTimeout: 5000,
      requestTimeout: 20000,
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 2000 }
    })
    this.adminClient = null
  }

  async admin () {
    if (!this.adminClient) {
      this.adminClient = this.kafka.admin({ retry: { retries: 2, initialRetryTime: 100 } })
      await this.adminClient.connect()
    }
    return this.adminClient
  }

  async close () {
    if (this.adminClient) await this.adminClient.disconnect()
  }

  async createTopics (op) {
    const admin = await this.admin()
    return admin.createTopics({
      topics: op.topics.map((t) => ({
        topic: t.topic,
        numPartitions: t.numPartitions ?? 1,
        replicationFactor: t.replicationFactor ?? 1,
        configEntries: Object.entries(t.configs || {}).map(([name, value]) => ({ name, value }))
      })),
      validateOnly: !!op.validateOnly,
      waitForLeaders: op.waitForLeaders ?? true,
      timeout: op.timeout ?? 10000
    })
  }

  async deleteTopics (op) {
    return (await this.admin()).deleteTopics({ topics: op.topics, timeout: 10000 })
  }

  // op.untilAbsent ([names], optional): list again until none of them is listed (bounded,
  // the last list either way): a broker drops a deleted topic from its metadata when its
  // metadata log catches up, on Kafka after DeleteTopics answered.
  async listTopics (op) {
    const gone = op.untilAbsent ?? []
    return readUntil(async () => (await (await this.admin()).listTopics()).sort(),
      (listed) => gone.every((name) => !listed.includes(name)), op.untilMs)
  }

  async createPartitions (op) {
    return (await this.admin()).createPartitions({
      topicPartitions: op.topicPartitions, timeout: 10000
    })
  }

  // op.untilPartitions (a count, optional): fetch again until every topic has that many
  // partitions (bounded, the last answer either way): a broker learns of new partitions when
  // its metadata log catches up, on Kafka after CreatePartitions answered.
  async fetchTopicMetadata (op) {
    return readUntil(() => this.fetchTopicMetadataOnce(op),
      (topics) => op.untilPartitions === undefined ||
        topics.every((t) => t.partitions.length === op.untilPartitions), op.untilMs)
  }

  async fetchTopicMetadataOnce (op) {
    const meta = await (await this.admin()).fetchTopicMetadata({ topics: op.topics })
    return meta.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr,
        errorCode: p.partitionErrorCode
      })).sort((a, b) => a.partition - b.partition)
    }))
  }

  async describeCluster () {
    return (await this.admin()).describeCluster()
  }

  async fetchTopicOffsets (op) {
    const offsets = await (await this.admin()).fetchTopicOffsets(op.topic)
    return offsets.map((o) => ({
      partition: o.partition, offset: Number(o.offset), high: Number(o.high), low: Number(o.low)
    })).sort((a, b) => a.partition - b.partition)
  }

  async fetchTopicOffsetsByTimestamp (op) {
    const offsets = await (await this.admin()).fetchTopicOffsetsByTimestamp(op.topic, op.timestamp)
    return offsets.map((o) => ({ partition: o.partition, offset: Number(o.offset) }))
      .sort((a, b) => a.partition - b.partition)
  }

  async deleteTopicRecords (op) {
    const admin = await this.admin()
    // kafkajs looks the leaders up in its metadata cache without refreshing it first
    await admin.fetchTopicMetadata({ topics: [op.topic] })
    return admin.deleteTopicRecords({
      topic: op.topic,
      partitions: op.partitions.map((p) => ({ partition: p.partition, offset: String(p.offset) }))
    })
  }

  // op.until ({name: value}, optional): describe again every 100 ms, for up to
  // op.untilMs (20 s), until the first resource shows those values. A broker applies a
  // committed config change when its metadata catches up, on Kafka after AlterConfigs answers.
  async describeConfigs (op) {
    const deadline = Date.now() + (op.untilMs ?? 20000)
    for (;;) {
      const described = await this.describeConfigsOnce(op)
      const shown = described[0] ? described[0].configs : {}
      const wanted = Object.entries(op.until ?? {})
      if (wanted.every(([k, v]) => shown[k] && shown[k].value === v) || Date.now() > deadline) {
        return described
      }
      await sleep(100)
    }
  }

  async describeConfigsOnce (op) {
    const types = { topic: ConfigResourceTypes.TOPIC, broker: ConfigResourceTypes.BROKER }
    const res = await (await this.admin()).describeConfigs({
      includeSynonyms: false,
      resources: op.resources.map((r) => ({
        type: types[r.type], name: r.name, configNames: r.configNames
      }))
    })
    return res.resources.map((r) => ({
      errorCode: r.errorCode,
      name: r.resourceName,
      configs: Object.fromEntries(r.configEntries.map((c) => [c.configName, {
        value: c.configValue, readOnly: c.readOnly, isDefault: c.isDefault, source: c.configSource
      }]))
    }))
  }

  async alterConfigs (op) {
    const types = { topic: ConfigResourceTypes.TOPIC, broker: ConfigResourceTypes.BROKER }
    return (await this.admin()).alterConfigs({
      validateOnly: false,
      resources: op.resources.map((r) => ({
        type: types[r.type],
        name: r.name,
        configEntries: Object.entries(r.configs).map(([name, value]) => ({ name, value }))
      }))
    })
  }

  async listGroups () {
    const { groups } = await (await this.admin()).listGroups()
    return groups
  }

  async describeGroups (op) {
    const { groups } = await (await this.admin()).describeGroups(op.groupIds)
    return groups.map((g) => ({
      groupId: g.groupId,
      state: g.state,
      protocolType: g.protocolType,
      protocol: g.protocol,
      errorCode: g.errorCode,
      members: g.members.map((m) => ({ memberId: m.memberId, clientId: m.clientId, clientHost: m.clientHost }))
    }))
  }

  async deleteGroups (op) {
    return (await this.admin()).deleteGroups(op.groupIds)
  }

  async fetchOffsets (op) {
    const res = await (await this.admin()).fetchOffsets({ groupId: op.groupId, topics: op.topics })
    return res.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({
        partition: p.partition, offset: Number(p.offset), metadata: p.metadata
      })).sort((a, b) => a.partition - b.partition)
    }))
  }

  async setOffsets (op) {
    return (await this.admin()).setOffsets({
      groupId: op.groupId,
      topic: op.topic,
      partitions: op.partitions.map((p) => ({ partition: p.partition, offset: String(p.offset) }))
    })
  }

  async produce (op) {
    const producer = this.kafka.producer({
      idempotent: !!op.idempotent,
      transactionalId: op.transactionalId,
      maxInFlightRequests: op.idempotent || op.transactionalId ? 1 : undefined,
      allowAutoTopicCreation: op.allowAutoTopicCreation ?? false,
      retry: { retries: op.retries ?? 3, initialRetryTime: 100 }
    })
    await producer.connect()
    try {
      const send = {
        topic: op.topic,
        messages: messagesIn(op.messages),
        acks: op.acks ?? -1,
        compression: CODECS[op.compression || 'none'],
        timeout: op.timeout ?? 10000
      }
      if (op.transactionalId) {
        const txn = await producer.transaction()
        try {
          const meta = await txn.send(send)
          if (op.abort) await txn.abort()
          else await txn.commit()
          return meta
        } catch (e) {
          try { await txn.abort() } catch (_) {}
          throw e
        }
      }
      return await producer.send(send)
    } finally {
      await producer.disconnect()
    }
  }

  // Consume with a (fresh) consumer group until `count` records arrived or `timeoutMs` passed.
  // Returns the records and the group events (joins with their assignments).
  async consume (op) {
    const consumer = this.kafka.consumer({
      groupId: op.groupId,
      readUncommitted: !!op.readUncommitted,
      sessionTimeout: op.sessionTimeout ?? 10000,
      rebalanceTimeout: op.rebalanceTimeout ?? 10000,
      heartbeatInterval: op.heartbeatInterval ?? 500,
      maxWaitTimeInMs: op.maxWaitTimeInMs ?? 500,
      allowAutoTopicCreation: false,
      retry: { retries: op.retries ?? 3, initialRetryTime: 100 }
    })
    const records = []
    const joins = []
    const crashes = []
    consumer.on(consumer.events.GROUP_JOIN, (e) => joins.push({
      generationId: e.payload.generationId,
      memberId: e.payload.memberId,
      leaderId: e.payload.leaderId,
      isLeader: e.payload.isLeader,
      assignment: e.payload.memberAssignment,
      protocol: e.payload.groupProtocol
    }))
    consumer.on(consumer.events.CRASH, (e) => crashes.push(describeError(e.payload.error)))
    await consumer.connect()
    let done
    const finished = new Promise((resolve) => { done = resolve })
    const started = Date.now()
    try {
      await consumer.subscribe({ topics: [op.topic], fromBeginning: op.fromBeginning ?? true })
      await consumer.run({
        autoCommit: op.autoCommit ?? true,
        eachMessage: async ({ topic, partition, message }) => {
          records.push(recordOut(topic, partition, message))
          if (op.count !== undefined && records.length >= op.count) done()
        }
      })
      const timer = setTimeout(done, op.timeoutMs ?? 20000)
      // A member of a multi-member test stays at least minDurationMs (so it sees rebalances).
      await finished
      clearTimeout(timer)
      const rest = (op.minDurationMs ?? 0) - (Date.now() - started)
      if (rest > 0) await sleep(rest)
      if (op.commit) {
        await consumer.commitOffsets(op.commit.map((c) => ({
          topic: op.topic, partition: c.partition, offset: String(c.offset)
        })))
      }
    } finally {
      await consumer.disconnect()
    }
    return { records, joins, crashes }
  }
}

async function main () {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  const driver = new Driver(input.brokers, input.security)
  const results = []
  try {
    for (const op of input.ops) {
      const fn = driver[op.op]
      if (typeof fn !== 'function' || op.op === 'constructor') {
        results.push({ error: { name: 'UnknownOp', message: `unknown op ${op.op}` } })
        continue
      }
      try {
        // deadlineMs bounds an op that would otherwise retry for long (known differences)
        const work = fn.call(driver, op)
        const value = op.deadlineMs
          ? await Promise.race([work, sleep(op.deadlineMs).then(() => {
            throw Object.assign(new Error(`op ${op.op} still running after ${op.deadlineMs} ms`), { name: 'DriverDeadline', type: 'TIMEOUT' })
          })])
          : await work
        results.push({ ok: value === undefined ? null : value })
      } catch (e) {
        results.push({ error: describeError(e) })
      }
    }
  } finally {
    try { await driver.close() } catch (_) {}
  }
  process.stdout.write(JSON.stringify(results) + '\n')
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`driver failed: ${e && e.stack}\n`)
  process.exit(2)
})
