"""The HTTP differential against a reference registry and REST proxy (issues #28 and #35).

Scripted request transcripts (`transcripts.py`) are played once against a reference
implementation — Karapace, run from its public sources beside an Apache Kafka broker — by
`tools/record_reference_http.py`, which writes every answer (status, content type, JSON body)
to `recorded/<transcript>.json`. The suite replays the recorded requests against kbroker
(`tests/reference_http/`) and compares the answers field by field (`compare.py`), after the
normalisations `compare.py` names (volatile values only) and the known differences listed in
`known_differences.json`, each of which has an entry in `compat_tests/FINDINGS.md`.
"""
