"""API v3: broker configs, per broker and cluster-wide, read and written (Confluent REST
Proxy's ``/brokers/{b}/configs`` and ``/broker-configs`` families; topic configs are in
``v3.py``).

- ``GET .../brokers/{b}/configs`` (list), ``GET|PUT|DELETE .../brokers/{b}/configs/{name}``,
  ``POST .../brokers/{b}/configs:alter`` — one broker's configs (DescribeConfigs and
  IncrementalAlterConfigs on the BROKER resource named by its id).
- ``GET .../broker-configs`` (list), ``GET|PUT|DELETE .../broker-configs/{name}``,
  ``POST .../broker-configs:alter`` — the cluster-wide dynamic defaults (the BROKER
  resource with the empty name, Kafka's ``--entity-default``), kind ``KafkaClusterConfig``
  with ``config_type: BROKER``.

``PUT`` takes ``{"value": ...}``, ``:alter`` ``{"data": [{"name", "value", "operation":
"SET"|"DELETE"}]}``; both answer 204. What may be changed and who may change it (ALTER_CONFIGS
on the cluster, DESCRIBE_CONFIGS to read) are the handlers' rules; their errors come back
as Confluent's v3 bodies (403 for a denied principal, 400 for an invalid or read-only key).
Another broker's own configs are read and written on that broker (Kafka's Admin sends
them there too): the local handler checks the ACLs, then the request is forwarded.
"""
from __future__ import annotations

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from . import cluster
from .app import Call, Routes
from .errors import RestError, from_kafka
from .inproc import call_api
from .media import parse_json
from .v3 import OP_DELETE, OP_SET, _empty, cluster_id, config_json, config_ops, crn, listing, ok, url

BROKER_RESOURCE = 4


async def _call(call: Call, name: str, api_key: int, version: int, request, result):
    """The local handler's answer; for another broker's own configs (which a node answers
    INVALID_REQUEST "Unexpected broker id" for, after its ACL check, as Kafka's brokers
    do) the answer of that broker, over the node-to-node client (``forward.py``)."""
    resp = await call_api(call.broker, api_key, version, request)
    r = result(resp)
    if (r.error_code == ErrorCode.INVALID_REQUEST and name not in ("", str(call.broker.node_id))
            and call.gateway.forward is not None):
        got = await call.gateway.forward.call(int(name), api_key, version, request)
        if got is None:
            raise RestError(503, 503, f"Broker {name} cannot be reached from this node.")
        r = result(got)
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=True)
    return r


async def _describe(call: Call, name: str) -> list:
    R = messages.DescribeConfigsRequest
    r = await _call(call, name, 32, 4, R(resources=[R.DescribeConfigsResource(
        resource_type=BROKER_RESOURCE, resource_name=name, configuration_keys=None)],
        include_synonyms=True, include_documentation=False), lambda resp: resp.results[0])
    return sorted(r.configs, key=lambda c: c.name)


async def _alter(call: Call, name: str, ops: list[tuple[str, int, str | None]]):
    R = messages.IncrementalAlterConfigsRequest
    await _call(call, name, 44, 1, R(validate_only=False, resources=[
        R.AlterConfigsResource(resource_type=BROKER_RESOURCE, resource_name=name, configs=[
            R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])]),
        lambda resp: resp.responses[0])
    return _empty()


def _put_op(call: Call) -> list[tuple[str, int, str | None]]:
    body = parse_json(call.body)
    value = body.get("value")
    return [(call.params["config"], OP_SET, None if value is None else str(value))]


# ------------------------------------------------------------------ one broker

async def _broker(call: Call) -> str:
    broker_id = call.params["broker"]
    resp = await cluster.metadata(call.broker, [])
    if not any(str(b.node_id) == broker_id for b in resp.brokers):
        raise RestError(404, 404, f"Broker {broker_id} cannot be found.")
    return broker_id


def broker_config_json(call: Call, cid: str, broker_id: str, c) -> dict:
    entry = config_json(call, cid, "", c)
    entry.pop("topic_name")
    entry.update(kind="KafkaBrokerConfig", broker_id=int(broker_id),
                 metadata={"self": url(call, cid, "brokers", broker_id, "configs", c.name),
                           "resource_name": crn(cid, ("broker", broker_id), ("config", c.name))})
    return entry


async def list_broker_configs(call: Call):
    cid = cluster_id(call)
    broker_id = await _broker(call)
    return ok(listing(call, "KafkaBrokerConfigList",
                      [broker_config_json(call, cid, broker_id, c)
                       for c in await _describe(call, broker_id)]))


async def get_broker_config(call: Call):
    cid = cluster_id(call)
    broker_id = await _broker(call)
    for c in await _describe(call, broker_id):
        if c.name == call.params["config"]:
            return ok(broker_config_json(call, cid, broker_id, c))
    raise RestError(404, 404, f"Config {call.params['config']} cannot be found for broker {broker_id}.")


async def put_broker_config(call: Call):
    cluster_id(call)
    return await _alter(call, await _broker(call), _put_op(call))


async def delete_broker_config(call: Call):
    cluster_id(call)
    return await _alter(call, await _broker(call), [(call.params["config"], OP_DELETE, None)])


async def alter_broker_configs(call: Call):
    cluster_id(call)
    broker_id = await _broker(call)
    return await _alter(call, broker_id, config_ops(parse_json(call.body)))


# ------------------------------------------------------------------ cluster-wide defaults

def cluster_config_json(call: Call, cid: str, c) -> dict:
    entry = config_json(call, cid, "", c)
    entry.pop("topic_name")
    entry.update(kind="KafkaClusterConfig", config_type="BROKER",
                 metadata={"self": url(call, cid, "broker-configs", c.name),
                           "resource_name": crn(cid, ("broker-config", c.name))})
    return entry


async def list_cluster_configs(call: Call):
    cid = cluster_id(call)
    return ok(listing(call, "KafkaClusterConfigList",
                      [cluster_config_json(call, cid, c) for c in await _describe(call, "")]))


async def get_cluster_config(call: Call):
    cid = cluster_id(call)
    for c in await _describe(call, ""):
        if c.name == call.params["config"]:
            return ok(cluster_config_json(call, cid, c))
    raise RestError(404, 404, f"Config {call.params['config']} cannot be found for the cluster.")


async def put_cluster_config(call: Call):
    cluster_id(call)
    return await _alter(call, "", _put_op(call))


async def delete_cluster_config(call: Call):
    cluster_id(call)
    return await _alter(call, "", [(call.params["config"], OP_DELETE, None)])


async def alter_cluster_configs(call: Call):
    cluster_id(call)
    return await _alter(call, "", config_ops(parse_json(call.body)))


def install(routes: Routes) -> None:
    B = "/v3/clusters/{cluster}/brokers/{broker}/configs"
    routes.add("GET", B, list_broker_configs)
    routes.add("POST", B + ":alter", alter_broker_configs)
    routes.add("GET", B + "/{config}", get_broker_config)
    routes.add("PUT", B + "/{config}", put_broker_config)
    routes.add("DELETE", B + "/{config}", delete_broker_config)
    C = "/v3/clusters/{cluster}/broker-configs"
    routes.add("GET", C, list_cluster_configs)
    routes.add("POST", C + ":alter", alter_cluster_configs)
    routes.add("GET", C + "/{config}", get_cluster_config)
    routes.add("PUT", C + "/{config}", put_cluster_config)
    routes.add("DELETE", C + "/{config}", delete_cluster_config)
