"""Fixtures and the reporting plugin of the compatibility suite.

Targets. Every test that uses the `target` fixture (directly or through `broker` /
`broker_factory`) runs once per broker target chosen with `--targets` (default
`kafka,kbroker`). The parametrisation is session-scoped, so pytest runs all tests of one target
before the next; when the target changes, the previous target's shared broker is stopped (in
one process; an xdist worker keeps both, see xdist_scope).

Fixtures.
  target          "kafka" or "kbroker"
  broker          the target's shared broker for this session, started on first use with its
                  own data dir and a free loopback port. A `BrokerProcess`: `.bootstrap_servers`,
                  `.host`, `.port`, `.data_dir`, `.stop()`, `.kill()` (SIGKILL), `.start()`,
                  `.restart(hard=False)`, `.is_running()`. A test may stop/kill/restart it; the
                  next test gets it running again (same data, same port).
  broker_factory  `broker_factory(**overrides)` starts a fresh broker of the target with its
                  own data dir and broker configs (Kafka names, e.g.
                  `**{"auto.create.topics.enable": "false"}`); stopped at the end of the test.
  bootstrap       shortcut for `broker.bootstrap_servers`.
  topic_name      a unique topic name for this test (topics are never shared between tests).

Known differences. `@pytest.mark.known_difference("F-NNN")` names an open entry of
FINDINGS.md. On the kbroker target the test body must FAIL (reported `K`, "known F-NNN" in
the matrix); if it passes, the test fails and asks you to close the entry. On Kafka the marker
changes nothing: the test must pass. Only the test body counts: a broker that does not start is
an ERROR, never a known difference.

Matrix. Each test module sets `CLIENT = "<client library>"`; the session ends by printing the
test × client × broker matrix and writing it to `--matrix` (compat_tests/results/matrix.md).

kafka-python 3.x can lose a rebalance that completes between two short polls (a client race,
the same against Kafka and kbroker: tests/support/kafka_python_fixes.py); its guard is applied
for the whole suite, on both targets alike.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import pytest

from tests.support import kafka_python_fixes

kafka_python_fixes.apply()

# the kbroker CLI scenarios assert in a helper module: show the compared values on failure
pytest.register_assert_rewrite("compat_tests.kbroker_cli")

from compat_tests.kafka_runner import VERSION_ENV, KafkaBrokerProcess, kafka_libs, kafka_version
from compat_tests.ledger import FINDINGS, check_reference, read_ledger
from compat_tests.matrix import Matrix
from compat_tests.runner import BrokerProcess, BrokerStartError, KBrokerProcess

KNOWN_TARGETS = {"kafka": KafkaBrokerProcess, "kbroker": KBrokerProcess}
DEFAULT_MATRIX = Path(__file__).resolve().parent / "results" / "matrix.md"


# --- options and parametrisation -------------------------------------------------------------

def pytest_addoption(parser):
    group = parser.getgroup("compat", "kbroker compatibility suite")
    group.addoption("--targets", default="kafka,kbroker",
                    help="comma-separated broker targets to run every compat test on "
                         "(kafka, kbroker; default both)")
    group.addoption("--matrix", default=str(DEFAULT_MATRIX),
                    help="where to write the Markdown compatibility matrix")
    group.addoption("--kafka-version", default=None,
                    help="the Apache Kafka release of the kafka target and its tools (default: the "
                         "pin of tools/kafka_dist/pom.xml; e.g. 4.3.1, the previous reference)")
    group.addoption("--findings", default=str(FINDINGS),
                    help="the known-differences ledger (default compat_tests/FINDINGS.md)")


def _targets(config) -> list[str]:
    targets = [t.strip() for t in config.getoption("--targets").split(",") if t.strip()]
    unknown = [t for t in targets if t not in KNOWN_TARGETS]
    if unknown or not targets:
        raise pytest.UsageError(f"--targets: unknown {unknown}; choose from {sorted(KNOWN_TARGETS)}")
    return targets


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: left out of `make test`; `make compat` runs it")
    config.addinivalue_line(
        "markers", "known_difference(id): kbroker is recorded in compat_tests/FINDINGS.md as "
                   "failing this test; its kbroker run must fail, its Kafka run must pass")
    # kafka-python 3.0 loads its schemas with deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:kafka.protocol.schemas.load_json")
    config.addinivalue_line("filterwarnings", "ignore:open_text is deprecated:DeprecationWarning")
    config._compat_matrix = Matrix(_targets(config))
    version = config.getoption("--kafka-version")
    if version:     # before any broker or tool starts; child processes inherit it
        os.environ[VERSION_ENV] = version


def pytest_generate_tests(metafunc):
    if "target" in metafunc.fixturenames:
        targets = _targets(metafunc.config)
        metafunc.parametrize("target", targets, ids=targets, scope="session")


# --- brokers ---------------------------------------------------------------------------------

class BrokerPool:
    """Owns every broker process of the session; stops them all at the end."""

    def __init__(self, base: Path):
        self.base = base
        self.shared: dict[str, BrokerProcess] = {}
        self.start_errors: dict[str, str] = {}
        self.all: list[BrokerProcess] = []
        self.counter = 0

    def new(self, target: str, overrides: dict | None = None) -> BrokerProcess:
        self.counter += 1
        broker = KNOWN_TARGETS[target](self.base / f"{target}-{self.counter}", overrides)
        self.all.append(broker)
        return broker

    def get_shared(self, target: str) -> BrokerProcess:
        if target in self.start_errors:  # fail fast: do not retry a broken start per test
            pytest.fail(self.start_errors[target], pytrace=False)
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            # one process runs all tests of one target, then the next: the previous target's
            # broker is not needed again. An xdist worker is handed files of either target in
            # any order (xdist_scope), so it keeps both running rather than restart them.
            for other, broker in self.shared.items():
                if other != target and broker.is_running():
                    broker.stop()
        broker = self.shared.get(target)
        if broker is None:
            broker = self.shared[target] = self.new(target)
        if not broker.is_running():
            problem = None
            try:
                broker.start()
            except BrokerStartError as exc:
                problem = str(exc)
            if problem:
                if broker.starts <= 1:
                    self.start_errors[target] = problem
                pytest.fail(problem, pytrace=False)
        return broker

    def start_new(self, target: str, overrides: dict | None = None) -> BrokerProcess:
        """A fresh broker of `target` with `overrides`, started (the test fails if it does not
        start); the caller stops it."""
        broker = self.new(target, overrides)
        problem = None
        try:
            return broker.start()
        except BrokerStartError as exc:
            problem = str(exc)
        pytest.fail(problem, pytrace=False)

    def close(self) -> None:
        for broker in self.all:
            broker.stop(timeout=20)


@pytest.fixture(scope="session")
def broker_pool(tmp_path_factory):
    pool = BrokerPool(tmp_path_factory.mktemp("brokers"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def broker(target, broker_pool) -> BrokerProcess:
    return broker_pool.get_shared(target)


@pytest.fixture
def bootstrap(broker) -> str:
    return broker.bootstrap_servers


@pytest.fixture
def broker_factory(target, broker_pool):
    started: list[BrokerProcess] = []

    def make(**overrides) -> BrokerProcess:
        broker = broker_pool.start_new(target, overrides)
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop(timeout=20)


@pytest.fixture
def topic_name(request) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.originalname.removeprefix("test_"))
    return f"{base[:60]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def kafka_dist():
    """The pinned Kafka's jar folder (fetched if missing); CLI tests need it on any target."""
    return kafka_libs()


# --- known differences -----------------------------------------------------------------------

def _target_of(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("target") if callspec else None


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("known_difference")
    if marker:
        if len(marker.args) != 1:
            pytest.fail("known_difference takes exactly one ledger id, e.g. known_difference('F-001')",
                        pytrace=False)
        problem = check_reference(marker.args[0], read_ledger(Path(item.config.getoption("--findings"))))
        if problem:
            pytest.fail(problem, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    marker = item.get_closest_marker("known_difference")
    if _target_of(item):
        report.compat_row = [*_row_of(item), _target_of(item)]   # travels with xdist's reports
    if (marker and report.when == "call" and _target_of(item) == "kbroker"
            and len(marker.args) == 1):
        finding = marker.args[0]
        if report.failed:
            first = _first_line(report)
            report.outcome = "passed"
            report.longrepr = None
            report.known_difference = finding
            report.known_detail = first
        elif report.passed:
            report.outcome = "failed"
            report.longrepr = (f"{finding} is recorded in compat_tests/FINDINGS.md as a known "
                               f"difference, but kbroker now passes this test: close the ledger "
                               f"entry (Status: closed, with the date) and remove the marker.")
            report.fixed_finding = finding
    return report


def pytest_report_teststatus(report, config):
    finding = getattr(report, "known_difference", None)
    if finding and report.when == "call":
        return "known", "K", f"KNOWN DIFFERENCE {finding}"
    return None


def _first_line(report) -> str:
    text = str(report.longrepr or "")
    for line in text.splitlines():
        if line.startswith("E "):
            return line[1:].strip()[:200]
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else ""


# --- matrix ----------------------------------------------------------------------------------

def _row_of(item) -> tuple[str, str]:
    client = getattr(item.module, "CLIENT", item.module.__name__.rsplit(".", 1)[-1])
    name = item.originalname.removeprefix("test_")
    callspec = getattr(item, "callspec", None)
    if callspec:
        params = [str(v) for k, v in callspec.params.items() if k != "target"]
        if params:
            name += "[" + "-".join(params) + "]"
    return name, client


def xdist_scope(nodeid: str) -> str:
    """The xdist work unit of a test (`make test` runs the suite on four workers): one file's
    tests of one target, handed to the next free worker (largest units first), so the workers
    end together; a worker starts the shared broker of a target when its first unit of that
    target comes and keeps it to the end (most workers run both; BrokerPool.get_shared). The
    differential replay keeps both targets on one worker (kbroker is compared with the live
    Kafka replay). Tests without a target are units of their own."""
    path = nodeid.split("::")[0]
    if "/differential/" in path:
        return "differential"
    params = re.search(r"\[(.*)\]$", nodeid)
    tokens = params.group(1).split("-") if params else []
    for target in KNOWN_TARGETS:
        if target in tokens:
            return f"{target}:{path}"
    return nodeid


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:        # xdist is optional: without it the suite runs in one process
    pass
else:
    class TargetScheduling(LoadScopeScheduling):
        """`--dist loadgroup` for this suite: the units are `xdist_scope`'s groups (xdist's
        own loadgroup reads marks through node ids that pytest 9.2 no longer lets it edit)."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        if config.getoption("dist") == "loadgroup":
            return TargetScheduling(config, log)
        return None


def pytest_runtest_logreport(report):
    config = _CONFIG.get("config")
    if config is None or hasattr(config, "workerinput"):
        return
    info = getattr(report, "compat_row", None)
    if not info:
        return
    test, client, target = info
    if getattr(report, "known_difference", None):
        outcome, detail = f"known {report.known_difference}", report.known_detail
    elif getattr(report, "fixed_finding", None):
        outcome, detail = f"FIXED? {report.fixed_finding}", "passes; close the ledger entry"
    elif report.passed or report.skipped:
        outcome, detail = ("pass" if report.passed else "skip"), ""
    elif report.when == "call":
        outcome, detail = "FAIL", _first_line(report)
    else:
        outcome, detail = "ERROR", _first_line(report)
    config._compat_matrix.record(test, client, target, outcome, detail, report.duration)


_CONFIG: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    _CONFIG["config"] = session.config
    session.config._compat_started = time.monotonic()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):
        return
    matrix: Matrix = config._compat_matrix
    if not matrix.rows:
        return
    path = Path(config.getoption("--matrix"))
    matrix.write(path, kafka_version())
    terminalreporter.section("compatibility matrix")
    terminalreporter.write_line(matrix.text())
    regs = matrix.regressions()
    terminalreporter.write_line("")
    terminalreporter.write_line(
        f"regressions (Kafka passes, kbroker fails, not a known difference): {len(regs)}; "
        f"matrix written to {path}")
