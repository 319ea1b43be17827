"""Why each known difference of the HTTP differential stays: rules from (step, field) to a
FINDINGS.md entry, used to draft ``known_differences.json`` after a re-recording.

``python -m compat_tests.reference_http.known_rules <results.json>`` reads the per-step
results of `replay.replay` (saved as JSON) and prints the draft list: every difference a rule
explains, with both values, and, on stderr, every difference no rule explains — those are
either kbroker bugs to fix or new rules (and FINDINGS.md entries) to write. The draft is
reviewed by hand before it replaces the list; the test reads only the list.
"""
from __future__ import annotations

import fnmatch
import json
import sys

# (transcript, step glob, field glob, finding, why)
RULES = [
    # --- registry -----------------------------------------------------------------------
    ("registry", "id-1-schema", "*", "F-980", "Karapace 5.0.3 has no GET /schemas/ids/{id}/schema"),
    ("registry", "id-1-subjects*", "*", "F-980", "Karapace 5.0.3 has no GET /schemas/ids/{id}/subjects"),
    ("registry", "compat-all-versions", "*", "F-980",
     "Karapace 5.0.3 has no POST /compatibility/subjects/{s}/versions (all versions)"),
    ("registry", "trans-check-v3-verbose", "*", "F-980",
     "Karapace 5.0.3 has no POST /compatibility/subjects/{s}/versions (all versions)"),
    ("registry", "mode-*", "*", "F-980",
     "Karapace 5.0.3 serves GET /mode only: no PUT/DELETE /mode, no per-subject mode, no "
     "IMPORT with explicit ids (so READONLY does not refuse a registration there)"),
    ("registry", "subjects-prefix", "*", "F-980", "Karapace 5.0.3 ignores subjectPrefix"),
    ("registry", "err-unknown-path", "body", "F-986", "Karapace answers a plain-text body"),
    ("registry", "err-method-not-allowed", "body", "F-986", "Karapace answers a plain-text body"),
    ("registry", "err-text-content-type", "body.*", "F-986",
     "Karapace's 415 body has no error_code"),
    ("registry", "err-malformed-json", "*", "F-981",
     "Karapace (FastAPI) answers 422/422 for a body that is not JSON; Confluent 400"),
    ("registry", "err-missing-schema", "body.error_code", "F-981",
     "Karapace (FastAPI) answers error_code 422; Confluent 42201"),
    ("registry", "err-unknown-type", "body.error_code", "F-981",
     "Karapace (FastAPI) answers error_code 422; Confluent 42201"),
    ("registry", "config-put-missing-field", "body.error_code", "F-981",
     "Karapace (FastAPI) answers error_code 422; kbroker 42203 (invalid level)"),
    ("registry", "*", "body.schema", "F-982",
     "Protobuf text: kbroker prints its canonical layout (no blank lines, no final newline); "
     "Karapace answers the text as registered"),
    ("registry", "*", "body.messages", "F-983",
     "verbose messages: Karapace leaves out `messages` when compatible and sends them without "
     "verbose; Confluent and kbroker send [] when compatible and verbose, nothing otherwise"),
    ("registry", "json-register-v2", "*", "F-984",
     "adding `required` to a JSON Schema: Karapace accepts it under BACKWARD; Confluent "
     "(REQUIRED_ATTRIBUTE_ADDED is not a compatible change) and kbroker refuse it"),
    ("registry", "json-version-latest", "*", "F-984", "follows from json-register-v2"),
    ("registry", "table-json-*-add-required", "*", "F-984",
     "adding `required` to a JSON Schema: incompatible for Confluent and kbroker"),
    ("registry", "ref-avro-*", "*", "F-985", "Karapace 5.0.3 refuses Avro references (44302)"),
    ("registry", "ref-delete-referenced-subject", "*", "F-985",
     "in Karapace nothing references ref-address (its Avro reference was refused)"),
    ("registry", "del-subjects-*", "body", "F-985",
     "subject listings: ref-customer/ref-address (F-985), ref-import (F-980)"),
    ("registry", "subjects-final", "body", "F-985",
     "subject listings: ref-customer/ref-address (F-985), ref-import (F-980)"),
    ("registry", "schemas-list", "body", "F-985",
     "the schema listing holds the schemas of F-980/F-984/F-985; Karapace's has null references"),
    ("registry", "trans-register-*", "body.id", "F-980",
     "kbroker gave TRANS_V1's id already in IMPORT mode (F-980)"),
    ("registry", "compat-subject-missing", "*", "F-986",
     "`latest` of a missing subject: Karapace 404 40402; kbroker 200 is_compatible true "
     "(Confluent since 7.0 checks against no version)"),
    ("registry", "compat-latest-bad", "body.messages", "F-983", "see F-983"),
    ("registry", "id-missing-versions", "*", "F-986",
     "versions of a missing id: Karapace 200 [], kbroker 404 40403"),
    ("registry", "config-delete-subject", "*", "F-986",
     "DELETE /config/{s}: Karapace answers the global level as `compatibility`; kbroker the "
     "deleted level as `compatibilityLevel` (Confluent's answer)"),
    ("registry", "err-config-missing-subject", "body.error_code", "F-986",
     "a subject without its own level: Karapace 40401, kbroker 40408 (Confluent's code)"),
    ("registry", "err-mode-missing-subject", "body.error_code", "F-986",
     "a subject without its own mode: Karapace 40401, kbroker 40409 (Confluent's code)"),
    ("registry", "del-*", "body.id", "F-980", "ids shifted by kbroker's IMPORT registration"),
    ("registry", "err-plain-json-content-type", "body.id", "F-980",
     "ids shifted by kbroker's IMPORT registration"),
    # --- REST proxy ---------------------------------------------------------------------
    ("rest", "*", "content_type", "F-987",
     "Karapace answers application/vnd.kafka.json.v2+json (and application/json on 204s); "
     "Confluent and kbroker application/vnd.kafka.v2+json, polls in the embedded format's type"),
    ("rest", "v3-*", "*", "F-980", "Karapace 5.0.3 serves no API v3"),
    ("rest", "produce-*", "body.offsets.*.error*", "F-988",
     "Karapace leaves out the null error_code/error of each offset; Confluent sends them"),
    ("rest", "produce-binary-keyed", "body.offsets.*", "F-988",
     "keyed records: Karapace partitions with librdkafka's consistent_random (CRC32), "
     "Confluent's proxy and kbroker with the Java client's murmur2"),
    ("rest", "produce-binary-to-partition", "body.offsets.*", "F-988",
     "offsets follow from the keyed placement"),
    ("rest", "partition-offsets-*", "body.end_offset", "F-988",
     "offsets follow from the keyed placement"),
    ("rest", "produce-binary-null-value", "body.offsets.*", "F-988",
     "Karapace answers offset -1 for a null value"),
    ("rest", "consumer-poll*", "body", "F-988", "records follow from the keyed placement"),
    ("rest", "*-consumer-poll", "body.*.timestamp", "F-989",
     "Karapace adds `timestamp` to v2 records; Confluent's v2 records have none"),
    ("rest", "protobuf-consumer-poll", "body", "F-989",
     "Karapace refused the Protobuf produce, so there is nothing to poll"),
    ("rest", "consumer-create", "body.base_uri", "F-989",
     "Karapace's base_uri is relative; Confluent's and kbroker's absolute"),
    ("rest", "*-consumer-create", "body.base_uri", "F-989",
     "Karapace's base_uri is relative; Confluent's and kbroker's absolute"),
    ("rest", "topic-missing", "body.error_code", "F-989", "missing topic: Karapace 40403, kbroker 40401"),
    ("rest", "produce-avro-bad-value", "body.error_code", "F-989",
     "a value that does not fit its schema: Karapace 42205, kbroker 42203"),
    ("rest", "produce-jsonschema-invalid-value", "body.error_code", "F-989",
     "a value that does not fit its schema: Karapace 42205, kbroker 42203"),
    ("rest", "produce-avro-unknown-id", "*", "F-989",
     "an unknown schema id: Karapace 422 42205, kbroker 404 40403"),
    ("rest", "produce-protobuf-inline", "*", "F-989",
     "Karapace 5.0.3 refuses this inline Protobuf produce (42205 'Object does not fit')"),
    ("rest", "produce-missing-topic", "*", "F-989",
     "a produce to a missing topic: Karapace 404 40401; kbroker creates it "
     "(auto.create.topics.enable, as the broker's own Produce does)"),
    ("rest", "topics-final", "body", "F-989", "kbroker created ref-gw-missing"),
    ("rest", "produce-record-partition-missing", "*", "F-989",
     "a record naming a missing partition: Karapace 422 with a per-record error 2, kbroker 404 40402"),
    ("rest", "produce-malformed-json", "*", "F-989",
     "a body that is not JSON: Karapace 400 with a plain-text body, kbroker 400 with error_code"),
    ("rest", "produce-bad-base64", "*", "F-989",
     "binary value not base64: Karapace 400 400, kbroker 422 42203"),
]


# (transcript, step, field) whose reference has no counterpart and whose kbroker value is
# volatile (cluster id, listener address): listed with ``"kbroker": "<any>"``
ANY_KBROKER = {("rest", "v3-clusters", "body")}


def classify(transcript: str, step: str, field: str):
    for t, sglob, fglob, finding, why in RULES:
        if t == transcript and fnmatch.fnmatchcase(step, sglob) and fnmatch.fnmatchcase(field, fglob):
            return finding, why
    return None


def draft(transcript: str, results: dict) -> tuple[list[dict], list]:
    entries, left = [], []
    for step, r in results.items():
        for field, ref, kb in r["diffs"]:
            hit = classify(transcript, step, field)
            if hit is None:
                left.append((step, field, ref, kb))
                continue
            if (transcript, step, field) in ANY_KBROKER:
                kb = "<any>"
            entries.append({"transcript": transcript, "step": step, "field": field,
                            "reference": ref, "kbroker": kb, "finding": hit[0], "why": hit[1]})
    return entries, left


def main(argv: list[str]) -> int:
    entries = []
    for path in argv:
        data = json.loads(open(path).read())
        for transcript, results in data.items():
            got, left = draft(transcript, results)
            entries += got
            for item in left:
                print("UNEXPLAINED", transcript, json.dumps(item)[:300], file=sys.stderr)
    print(json.dumps({"differences": entries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
