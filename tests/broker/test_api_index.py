"""The API index (``kbroker/api/_index.py``) against the modules it stands for: the registry
lists every API from the index before importing its module (issue 32, start-up), so an index
that differs from what the modules' ``@api`` decorators declare would advertise wrong
versions or miss an API. That an entry loads its module on the API's first request, and
answers it, is shown with a real process in ``test_startup_imports.py``."""
from __future__ import annotations

import pkgutil

import kbroker.api as api
from kbroker.api import _make_index
from kbroker.api._index import INDEX


def test_the_index_is_what_the_modules_declare():
    # every handler module of the package is indexed, and the file is the generator's output
    modules = {i.name for i in pkgutil.iter_modules(api.__path__) if not i.name.startswith("_")}
    assert modules == {entry[0] for entry in INDEX.values()}
    assert _make_index.INDEX_FILE.read_text() == _make_index.render(), \
        "kbroker/api/_index.py is stale: run python -m kbroker.api._make_index"
    assert _make_index.main(["--check"]) == 0


def test_the_registry_lists_every_api_of_the_index():
    registry = api.load_all()
    assert set(registry) == set(INDEX)
    for key, (module, name, lo, hi, served, advertised) in INDEX.items():
        spec = registry[key]
        assert (spec.name, spec.min_version, spec.max_version, spec.served_from,
                spec.advertised) == (name, lo, hi, served, advertised)
