"""aiokafka users: the fixtures are plain values, so asyncio code runs with ``asyncio.run``
(or under pytest-asyncio / anyio if the project uses them)."""
import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

import orders


def test_round_trip_with_aiokafka(kbroker, kafka_topic):
    async def main():
        producer = AIOKafkaProducer(bootstrap_servers=kbroker.bootstrap_servers)
        await producer.start()
        try:
            for i in range(5):
                key, value = orders.encode({"customer": "ada", "amount": 10 * i})
                await producer.send_and_wait(kafka_topic, value, key=key)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(kafka_topic, bootstrap_servers=kbroker.bootstrap_servers,
                                    group_id="aio", auto_offset_reset="earliest")
        await consumer.start()
        try:
            got = []
            while len(got) < 5:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                for records in batch.values():
                    got += [orders.decode(r.value) for r in records]
            return got
        finally:
            await consumer.stop()

    got = asyncio.run(main())
    assert orders.total_by_customer(got) == {"ada": 100}
