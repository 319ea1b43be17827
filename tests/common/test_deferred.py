"""kbroker.common.deferred: a module's body run at its first use, not at its import.

Each test writes its own modules into a fresh folder on ``sys.path`` (names unique to the
test, so ``sys.modules`` never mixes them up) and removes them afterwards. A module records
that its body ran in ``deferred_probe.ran`` (a module that is never deferred)."""
from __future__ import annotations

import importlib
import sys
import textwrap
import threading

import pytest

from kbroker.common import deferred

_PROBE = "ran = []\n"


@pytest.fixture
def modules(tmp_path, request):
    """write(name, source) puts a module in a folder on sys.path; all are forgotten after."""
    prefix = f"dm_{request.node.name.replace('[', '_').replace(']', '_')}_"
    (tmp_path / "deferred_probe.py").write_text(_PROBE)
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    written: list[str] = []

    def write(name: str, source: str) -> str:
        full = prefix + name
        (tmp_path / f"{full}.py").write_text(
            "import deferred_probe\ndeferred_probe.ran.append(__name__)\n"
            + textwrap.dedent(source).replace("{prefix}", prefix))
        written.append(full)
        importlib.invalidate_caches()
        return full

    try:
        yield write
    finally:
        deferred.uninstall()
        sys.path.remove(str(tmp_path))
        for name in [*written, "deferred_probe"]:
            sys.modules.pop(name, None)


def _ran() -> list[str]:
    import deferred_probe
    return deferred_probe.ran


def test_the_body_runs_at_the_first_use_and_only_once(modules):
    name = modules("a", """
        VALUE = 42
        def double(x):
            return 2 * x
    """)
    deferred.install(frozenset({name}))
    module = importlib.import_module(name)
    assert _ran() == [] and deferred.pending() == [name]
    assert module.__name__ == name and module.__spec__.name == name   # no run for these
    assert module.__file__.endswith(f"{name}.py")
    importlib.import_module(name)                       # a second import statement
    exec(f"import {name}", {})
    assert _ran() == []
    assert module.double(module.VALUE) == 84            # the first use runs it
    assert _ran() == [name] and deferred.pending() == []
    assert type(module) is type(sys)                    # an ordinary module from now on
    assert module.__loader__ is module.__spec__.loader
    assert not isinstance(module.__loader__, deferred._Loader)
    assert module.VALUE == 42 and _ran() == [name]
    with pytest.raises(AttributeError):
        module.missing


def test_from_import_and_dir_run_the_body(modules):
    a = modules("a", "VALUE = 1\n")
    b = modules("b", "VALUE = 2\n")
    deferred.install(frozenset({a, b}))
    importlib.import_module(a)
    importlib.import_module(b)
    namespace: dict = {}
    exec(f"from {a} import VALUE", namespace)
    assert namespace["VALUE"] == 1 and _ran() == [a]
    assert "VALUE" in dir(sys.modules[b]) and _ran() == [a, b]


def test_only_the_names_given_while_installed(modules):
    kept = modules("kept", "X = 1\n")
    other = modules("other", "X = 2\n")
    later = modules("later", "X = 3\n")
    deferred.install(frozenset({kept, later}))
    importlib.import_module(kept)
    importlib.import_module(other)                      # not a deferred name: runs now
    assert _ran() == [other]
    deferred.uninstall()
    importlib.import_module(later)                      # imported after uninstall: runs now
    assert _ran() == [other, later]
    assert deferred.pending() == [kept]                 # deferred before: still waiting
    assert sys.modules[kept].X == 1 and _ran() == [other, later, kept]


def test_a_deferred_body_may_use_another_deferred_module(modules):
    inner = modules("inner", "BASE = 10\n")
    outer = modules("outer", f"""
        import {inner}
        TOTAL = {inner}.BASE + 1
    """)
    deferred.install(frozenset({inner, outer}))
    module = importlib.import_module(outer)
    assert _ran() == []
    assert module.TOTAL == 11
    assert _ran() == [outer, inner]


def test_a_body_that_fails_raises_at_the_first_use_and_leaves_sys_modules(modules):
    name = modules("broken", """
        X = 1
        raise ValueError("broken body")
    """)
    deferred.install(frozenset({name}))
    module = importlib.import_module(name)
    assert name in sys.modules
    with pytest.raises(ValueError, match="broken body"):
        module.X
    assert name not in sys.modules                      # as after a failed import
    deferred.uninstall()
    with pytest.raises(ValueError, match="broken body"):
        importlib.import_module(name)                   # imported again: fails again


def test_a_module_that_uses_itself_while_its_body_runs_sees_it_partly_made(modules):
    """As a circular import does: a name not yet defined is an AttributeError."""
    name = modules("selfish", """
        import sys
        FIRST = 1
        try:
            sys.modules[__name__].LATER
        except AttributeError as e:
            SEEN = str(e)
        LATER = 2
    """)
    deferred.install(frozenset({name}))
    module = importlib.import_module(name)
    assert module.LATER == 2
    assert "partially initialized" in module.SEEN and "LATER" in module.SEEN


def test_threads_racing_for_the_first_use_run_the_body_once(modules):
    name = modules("raced", """
        VALUE = sum(range(100_000))
    """)
    deferred.install(frozenset({name}))
    module = importlib.import_module(name)
    start = threading.Barrier(8)
    seen: list[int] = []

    def use():
        start.wait()
        seen.append(module.VALUE)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [sum(range(100_000))] * 8
    assert _ran() == [name]


def test_extension_modules_are_imported_as_usual():
    """An extension module's object is made by its library: nothing to defer."""
    import importlib.machinery
    spec = importlib.machinery.PathFinder.find_spec("_ssl")
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        pytest.fail("the probe needs _ssl as an extension module of this interpreter")
    deferred.install(frozenset({"_ssl"}))
    try:
        assert deferred._FINDER.find_spec("_ssl").loader.__class__ is \
            importlib.machinery.ExtensionFileLoader
    finally:
        deferred.uninstall()
