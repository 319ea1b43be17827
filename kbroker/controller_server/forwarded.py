"""Admin writes forwarded by brokers: CreateTopics (19, v2–v7), DeleteTopics (20, v1–v6),
AlterConfigs (33, v0–v2), CreatePartitions (37, v0–v3), ElectLeaders (43, v0–v2),
IncrementalAlterConfigs (44, v0–v1), AlterPartitionReassignments (45, v0–v1),
ListPartitionReassignments (46, v0), CreateAcls (30, v1–v3), DeleteAcls (31, v1–v3),
AlterUserScramCredentials (51, v0), UpdateFeatures (57, v0–v2),
UnregisterBroker (64, v0).

The client plane's handlers (``kbroker.api.*``) are reused as they are: on this plane
``ctx.broker.controller`` is the local ``QuorumController``. When this node is not the
active controller every entry is answered ``NOT_CONTROLLER`` and the forwarding broker
retries against the leader it learns from Raft."""
from __future__ import annotations

from kbroker.api import (alter_client_quotas, alter_configs, alter_partition_reassignments,
                         alter_user_scram_credentials, create_acls, create_partitions,
                         create_topics, delete_acls,
                         delete_topics, elect_leaders, incremental_alter_configs,
                         list_partition_reassignments, unregister_broker, update_features)
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

NC = ErrorCode.NOT_CONTROLLER


def _not_controller(api_key: int, request):
    if api_key == 19:
        R = messages.CreateTopicsResponse
        return R(throttle_time_ms=0, topics=[R.CreatableTopicResult(name=t.name, error_code=NC)
                                             for t in request.topics or ()])
    if api_key == 20:
        R = messages.DeleteTopicsResponse
        names = [(t.name, t.topic_id) for t in request.topics or ()] or \
            [(n, None) for n in request.topic_names or ()]
        return R(throttle_time_ms=0, responses=[R.DeletableTopicResult(name=n or "", topic_id=i, error_code=NC)
                                                for n, i in names])
    if api_key == 37:
        R = messages.CreatePartitionsResponse
        return R(throttle_time_ms=0, results=[R.CreatePartitionsTopicResult(name=t.name, error_code=NC)
                                              for t in request.topics or ()])
    if api_key == 43:
        R = messages.ElectLeadersResponse
        return R(throttle_time_ms=0, error_code=NC, replica_election_results=[
            R.ReplicaElectionResult(topic=t.topic, partition_result=[
                R.ReplicaElectionResult.PartitionResult(partition_id=i, error_code=NC) for i in t.partitions])
            for t in request.topic_partitions or ()])
    if api_key == 45:
        R = messages.AlterPartitionReassignmentsResponse
        return R(throttle_time_ms=0, error_code=NC, responses=[],
                 allow_replication_factor_change=getattr(request, "allow_replication_factor_change", True))
    if api_key == 51:
        R = messages.AlterUserScramCredentialsResponse
        users = [d.name for d in request.deletions or ()] + [u.name for u in request.upsertions or ()]
        return R(throttle_time_ms=0, results=[R.AlterUserScramCredentialsResult(user=u, error_code=NC)
                                              for u in dict.fromkeys(users)])
    if api_key == 64:
        return messages.UnregisterBrokerResponse(throttle_time_ms=0, error_code=NC, error_message=None)
    if api_key == 57:
        R = messages.UpdateFeaturesResponse
        return R(throttle_time_ms=0, error_code=NC, error_message="No active controller.", results=[])
    if api_key == 46:
        R = messages.ListPartitionReassignmentsResponse
        return R(throttle_time_ms=0, error_code=NC, topics=[])
    if api_key == 49:
        R = messages.AlterClientQuotasResponse
        return R(throttle_time_ms=0, entries=[R.EntryData(
            error_code=NC, error_message="No active controller.", entity=[
                R.EntryData.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                for e in entry.entity or ()]) for entry in request.entries or ()])
    if api_key == 30:
        R = messages.CreateAclsResponse
        return R(throttle_time_ms=0, results=[R.AclCreationResult(error_code=NC)
                                              for _ in request.creations or ()])
    if api_key == 31:
        R = messages.DeleteAclsResponse
        return R(throttle_time_ms=0, filter_results=[R.DeleteAclsFilterResult(error_code=NC, matching_acls=[])
                                                     for _ in request.filters or ()])
    R = messages.response_class(api_key)
    return R(throttle_time_ms=0, responses=[R.AlterConfigsResourceResponse(
        error_code=NC, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources or ()])


def _forwarded(api_key: int, versions, inner):
    @controller_api(api_key, versions=versions)
    async def handle(ctx, request):
        c = ctx.broker.controller
        if c is None or not c.active:
            return _not_controller(api_key, request)
        try:
            return await inner(ctx, request)
        except NotController:
            return _not_controller(api_key, request)
    return handle


_forwarded(19, (2, 7), create_topics.handle)
_forwarded(20, (1, 6), delete_topics.handle)
_forwarded(33, (0, 2), alter_configs.handle)
_forwarded(37, (0, 3), create_partitions.handle)
_forwarded(44, (0, 1), incremental_alter_configs.handle)
_forwarded(43, (0, 2), elect_leaders.handle)
_forwarded(45, (0, 1), alter_partition_reassignments.handle)
_forwarded(46, (0, 0), list_partition_reassignments.handle)
_forwarded(49, (0, 1), alter_client_quotas.handle)
_forwarded(30, (1, 3), create_acls.handle)
_forwarded(31, (1, 3), delete_acls.handle)
_forwarded(51, (0, 0), alter_user_scram_credentials.handle)
_forwarded(57, (0, 2), update_features.handle)
_forwarded(64, (0, 0), unregister_broker.handle)
