"""API v3 ACLs: ``GET`` (search), ``POST`` (create one), ``DELETE`` (delete matching) on
``/v3/clusters/{id}/acls``, through the DescribeAcls, CreateAcls and DeleteAcls handlers
(which check ALTER/DESCRIBE on the cluster and validate the bindings, as for any client).

Fields are Confluent's: ``resource_type`` (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, ...),
``resource_name``, ``pattern_type`` (LITERAL, PREFIXED; MATCH and ANY in filters),
``principal``, ``host``, ``operation``, ``permission`` (ALLOW, DENY); names are Kafka's
enum names. In a search or delete a missing field matches anything.
"""
from __future__ import annotations

from kbroker.authz.acls import OPERATION_NAMES, PATTERN_NAMES, PERMISSION_NAMES, RESOURCE_NAMES
from kbroker.wire import messages

from .app import Call, Routes
from .errors import RestError, from_kafka
from .inproc import call_api
from .media import parse_json
from .v3 import cluster_id, crn, listing, ok, url

_CODES = {"resource_type": {v: k for k, v in RESOURCE_NAMES.items()},
          "pattern_type": {v: k for k, v in PATTERN_NAMES.items()},
          "operation": {v: k for k, v in OPERATION_NAMES.items()},
          "permission": {v: k for k, v in PERMISSION_NAMES.items()}}
_ANY = 1        # the ANY value of each enum


def _enum(field: str, value, *, required: bool) -> int:
    if value is None or value == "":
        if required:
            raise RestError(400, 400, f"{field} is required")
        return _ANY
    code = _CODES[field].get(str(value).upper())
    if code is None:
        raise RestError(400, 400, f"unknown {field} {value!r} "
                                  f"({', '.join(n for n in _CODES[field] if n != 'UNKNOWN')})")
    return code


def acl_json(call: Call, cid: str, rt: int, name: str, pt: int, principal: str, host: str,
             op: int, perm: int) -> dict:
    return {"kind": "KafkaAcl",
            "metadata": {"self": url(call, cid, "acls") + f"?resource_type={RESOURCE_NAMES[rt]}"
                                 f"&resource_name={name}&pattern_type={PATTERN_NAMES[pt]}"
                                 f"&principal={principal}&host={host}"
                                 f"&operation={OPERATION_NAMES[op]}&permission={PERMISSION_NAMES[perm]}",
                         "resource_name": crn(cid, ("acl", ""))},
            "cluster_id": cid, "resource_type": RESOURCE_NAMES[rt], "resource_name": name,
            "pattern_type": PATTERN_NAMES[pt], "principal": principal, "host": host,
            "operation": OPERATION_NAMES[op], "permission": PERMISSION_NAMES[perm]}


def _filter(call: Call) -> dict:
    return {"resource_type": _enum("resource_type", call.query("resource_type"), required=False),
            "resource_name": call.query("resource_name") or None,
            "pattern_type": _enum("pattern_type", call.query("pattern_type"), required=False),
            "principal": call.query("principal") or None,
            "host": call.query("host") or None,
            "operation": _enum("operation", call.query("operation"), required=False),
            "permission": _enum("permission", call.query("permission"), required=False)}


async def search(call: Call):
    cid = cluster_id(call)
    f = _filter(call)
    resp = await call_api(call.broker, 29, 3, messages.DescribeAclsRequest(
        resource_type_filter=f["resource_type"], resource_name_filter=f["resource_name"],
        pattern_type_filter=f["pattern_type"], principal_filter=f["principal"],
        host_filter=f["host"], operation=f["operation"], permission_type=f["permission"]))
    if resp.error_code:
        raise from_kafka(resp.error_code, resp.error_message, v3=True)
    data = [acl_json(call, cid, r.resource_type, r.resource_name, r.pattern_type, a.principal,
                     a.host, a.operation, a.permission_type)
            for r in resp.resources for a in r.acls]
    return ok(listing(call, "KafkaAclList", data))


async def create(call: Call):
    cluster_id(call)
    body = parse_json(call.body)
    for field in ("resource_name", "principal", "host"):
        if not isinstance(body.get(field), str) or not body[field]:
            raise RestError(400, 400, f"{field} is required")
    R = messages.CreateAclsRequest
    resp = await call_api(call.broker, 30, 3, R(creations=[R.AclCreation(
        resource_type=_enum("resource_type", body.get("resource_type"), required=True),
        resource_name=body["resource_name"],
        resource_pattern_type=_enum("pattern_type", body.get("pattern_type"), required=True),
        principal=body["principal"], host=body["host"],
        operation=_enum("operation", body.get("operation"), required=True),
        permission_type=_enum("permission", body.get("permission"), required=True))]))
    r = resp.results[0]
    if r.error_code:
        raise from_kafka(r.error_code, r.error_message, v3=True)
    from kbroker.http.router import Response
    return Response(201, b"", "application/json")


async def delete(call: Call):
    cid = cluster_id(call)
    f = _filter(call)
    R = messages.DeleteAclsRequest
    resp = await call_api(call.broker, 31, 3, R(filters=[R.DeleteAclsFilter(
        resource_type_filter=f["resource_type"], resource_name_filter=f["resource_name"],
        pattern_type_filter=f["pattern_type"], principal_filter=f["principal"],
        host_filter=f["host"], operation=f["operation"], permission_type=f["permission"])]))
    fr = resp.filter_results[0]
    if fr.error_code:
        raise from_kafka(fr.error_code, fr.error_message, v3=True)
    data = [acl_json(call, cid, a.resource_type, a.resource_name, a.pattern_type, a.principal,
                     a.host, a.operation, a.permission_type)
            for a in fr.matching_acls if not a.error_code]
    return ok({"data": data})


def install(routes: Routes) -> None:
    routes.add("GET", "/v3/clusters/{cluster}/acls", search)
    routes.add("POST", "/v3/clusters/{cluster}/acls", create)
    routes.add("DELETE", "/v3/clusters/{cluster}/acls", delete)
