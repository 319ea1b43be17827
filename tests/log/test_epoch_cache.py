"""LeaderEpochCache: Kafka's rules one by one, the file format, and a model check."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from kbroker.log.epoch_cache import FILE_NAME, EpochEntry, LeaderEpochCache, read_epoch_file


def cache_with(tmp_path, *entries):
    c = LeaderEpochCache(tmp_path)
    for e, o in entries:
        assert c.assign(e, o)
    return c


def test_empty_cache(tmp_path):
    c = LeaderEpochCache(tmp_path)
    assert not c.loaded and c.entries() == [] and c.latest_epoch == -1
    assert c.end_offset_for(0, 10) == (-1, -1)
    assert c.end_offset_for(-1, 10) == (-1, -1)
    assert c.epoch_for_offset(5) == -1
    assert not (tmp_path / FILE_NAME).exists()  # nothing written until something changes


def test_assign_keeps_first_offset_of_each_epoch(tmp_path):
    c = cache_with(tmp_path, (1, 0), (3, 10))
    assert not c.assign(3, 15)          # same epoch, later offset: already known
    assert not c.assign(3, 10)
    assert c.entries() == [(1, 0), (3, 10)]
    assert c.assign(5, 20)
    assert c.latest_epoch == 5 and c.latest_entry == EpochEntry(5, 20)


def test_assign_same_epoch_lower_offset_replaces(tmp_path):
    c = cache_with(tmp_path, (1, 0), (3, 10))
    assert c.assign(3, 7)
    assert c.entries() == [(1, 0), (3, 7)]


def test_assign_conflicting_entry_replaces_newer_ones(tmp_path):
    # A new epoch whose start is below existing entries' starts removes them (Kafka).
    c = cache_with(tmp_path, (1, 0), (3, 10), (4, 20))
    assert c.assign(6, 15)
    assert c.entries() == [(1, 0), (3, 10), (6, 15)]
    # A lower epoch than the latest replaces every entry with an epoch >= it.
    assert c.assign(2, 30)
    assert c.entries() == [(1, 0), (2, 30)]


def test_assign_rejects_negative(tmp_path):
    c = LeaderEpochCache(tmp_path)
    with pytest.raises(ValueError):
        c.assign(-1, 0)
    with pytest.raises(ValueError):
        c.assign(0, -1)
    assert c.entries() == []


@pytest.mark.parametrize("requested,expected", [
    (-1, (-1, -1)),      # undefined epoch
    (5, (5, 30)),        # the latest epoch ends at the log end offset
    (6, (-1, -1)),       # above every known epoch
    (0, (0, 0)),         # below every known epoch: itself and the first start
    (1, (1, 10)),
    (2, (1, 10)),        # unknown in between: floor epoch, start of the next higher
    (3, (3, 20)),
    (4, (3, 20)),
])
def test_end_offset_for(tmp_path, requested, expected):
    c = cache_with(tmp_path, (1, 0), (3, 10), (5, 20))
    assert c.end_offset_for(requested, 30) == expected


def test_end_offset_for_when_first_epoch_starts_late(tmp_path):
    c = cache_with(tmp_path, (2, 100), (4, 150))
    assert c.end_offset_for(1, 200) == (1, 100)
    assert c.end_offset_for(4, 200) == (4, 200)


def test_epoch_for_offset(tmp_path):
    c = cache_with(tmp_path, (1, 5), (3, 10), (5, 20))
    assert [c.epoch_for_offset(o) for o in (0, 4, 5, 9, 10, 19, 20, 1000)] == \
        [-1, -1, 1, 1, 3, 3, 5, 5]


def test_truncate_from_end(tmp_path):
    c = cache_with(tmp_path, (1, 0), (3, 10), (5, 20))
    assert not c.truncate_from_end(21)
    assert c.truncate_from_end(20)
    assert c.entries() == [(1, 0), (3, 10)]
    assert c.truncate_from_end(5)
    assert c.entries() == [(1, 0)]
    assert c.truncate_from_end(0)
    assert c.entries() == []
    assert LeaderEpochCache(tmp_path).entries() == []


def test_truncate_from_start(tmp_path):
    c = cache_with(tmp_path, (1, 0), (3, 10), (5, 20))
    assert not c.truncate_from_start(0)
    assert c.truncate_from_start(15)       # (3, 10) now covers [15, 20)
    assert c.entries() == [(3, 15), (5, 20)]
    assert c.truncate_from_start(20)
    assert c.entries() == [(5, 20)]
    assert not c.truncate_from_start(20)
    assert c.truncate_from_start(25)
    assert c.entries() == [(5, 25)]
    assert LeaderEpochCache(tmp_path).entries() == [(5, 25)]


def test_clear(tmp_path):
    c = cache_with(tmp_path, (1, 0), (3, 10))
    assert c.clear()
    assert not c.clear()
    re = LeaderEpochCache(tmp_path)
    assert re.loaded and re.entries() == []


def test_file_format_and_round_trip(tmp_path):
    c = cache_with(tmp_path, (0, 0), (2, 1200), (7, 99999999999))
    assert (tmp_path / FILE_NAME).read_text() == "0\n3\n0 0\n2 1200\n7 99999999999\n"
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()
    re = LeaderEpochCache(tmp_path)
    assert re.loaded and re.entries() == c.entries()


def test_no_write_when_nothing_changes(tmp_path):
    c = cache_with(tmp_path, (1, 0))
    writes = c.writes
    c.assign(1, 50)
    c.truncate_from_end(10)
    c.truncate_from_start(0)
    assert c.writes == writes


def test_deferred_write(tmp_path):
    c = LeaderEpochCache(tmp_path)
    c.assign(1, 0, write=False)
    c.assign(2, 5, write=False)
    assert not (tmp_path / FILE_NAME).exists()
    c.write()
    assert read_epoch_file(tmp_path / FILE_NAME) == [(1, 0), (2, 5)]


@pytest.mark.parametrize("text", [
    "", "garbage", "1\n1\n0 0\n", "0\n2\n0 0\n", "0\n1\n0 0\n1 5\n", "0\n1\nx y\n",
    "0\n2\n3 10\n2 20\n", "0\n2\n2 10\n3 10\n", "0\n1\n-1 0\n", "0\n1\n1 2 3\n",
])
def test_corrupt_file_loads_as_missing(tmp_path, text):
    (tmp_path / FILE_NAME).write_text(text)
    c = LeaderEpochCache(tmp_path)
    assert not c.loaded and c.entries() == []
    c.assign(4, 8)
    assert LeaderEpochCache(tmp_path).entries() == [(4, 8)]


def test_in_memory_cache_writes_nothing(tmp_path):
    c = LeaderEpochCache(None)
    c.assign(1, 0)
    c.write()
    assert c.entries() == [(1, 0)] and list(tmp_path.iterdir()) == []


# -- model check -------------------------------------------------------------------------

ops = st.lists(st.one_of(
    st.tuples(st.just("assign"), st.integers(0, 12), st.integers(0, 200)),
    st.tuples(st.just("end"), st.integers(-5, 220)),
    st.tuples(st.just("start"), st.integers(0, 220)),
), max_size=40)


def model_apply(model: dict, op) -> None:
    """Kafka's cache as a plain sorted dict epoch -> start (the specification)."""
    kind = op[0]
    if kind == "assign":
        _, e, o = op
        if model:
            le = max(model)
            if le == e and o >= model[le]:
                return
        for k in sorted(model, reverse=True):
            if k >= e or model[k] >= o:
                del model[k]
            else:
                break
        model[e] = o
    elif kind == "end":
        _, o = op
        if o >= 0:
            for k in sorted(model, reverse=True):
                if model[k] >= o:
                    del model[k]
                else:
                    break
    else:
        _, o = op
        gone = [k for k in sorted(model) if model[k] <= o]
        if gone:
            for k in gone:
                del model[k]
            model[gone[-1]] = o


@settings(max_examples=150, deadline=None)
@given(ops=ops, probe=st.integers(-1, 14), leo=st.integers(200, 300))
def test_model(tmp_path_factory, ops, probe, leo):
    d = tmp_path_factory.mktemp("epochs")
    c = LeaderEpochCache(d)
    model: dict[int, int] = {}
    for op in ops:
        if op[0] == "assign":
            c.assign(op[1], op[2])
        elif op[0] == "end":
            c.truncate_from_end(op[1])
        else:
            c.truncate_from_start(op[1])
        model_apply(model, op)
        assert c.entries() == sorted(model.items())
        es = c.entries()
        assert all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in zip(es, es[1:]))
    if (d / FILE_NAME).exists():
        assert LeaderEpochCache(d).entries() == c.entries()
    # end_offset_for agrees with its definition
    epochs = sorted(model)
    got = c.end_offset_for(probe, leo)
    if probe == -1 or not epochs or probe > epochs[-1]:
        assert got == (-1, -1)
    elif probe == epochs[-1]:
        assert got == (probe, leo)
    else:
        higher = min(e for e in epochs if e > probe)
        lower = [e for e in epochs if e <= probe]
        assert got == ((lower[-1] if lower else probe), model[higher])
