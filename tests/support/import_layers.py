"""The import rules of ARCHITECTURE.md, read off the source with ``ast`` (nothing is imported).

Every ``import`` and ``from ... import`` of a ``kbroker`` module counts, wherever it stands:
at module level, inside a function, or under ``if TYPE_CHECKING:``. Two rules:

1. **Layers.** Each top-level package of ``kbroker/`` has a rank (``RANKS``). An import may
   point to a lower rank, or sideways to a package of the same rank; never up.
2. **No circles.** The graph of modules (a module imports another) has no cycle, so every
   module can be read, and imported, after the ones it names.

``check(root)`` returns one line per broken rule; an empty list means the tree keeps both.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.support.history.graph import sccs

# Lowest first. Packages of one rank may import each other (no module circle, though).
RANKS: dict[str, int] = {
    # foundations: codecs, record batches, error codes; clocks, durable writes
    "wire": 0, "common": 0,
    # pure authorization rules (ACLs, delegation tokens)
    "authz": 1,
    # listeners' TLS/SASL settings and mechanisms
    "security": 2,
    # Kafka's configuration keys, types and defaults; feature levels
    "config": 3,
    # storage and consensus: the partition log, the Raft quorum; client quota enforcement
    "log": 4, "raft": 4, "quota": 4,
    # the middle row: metadata image and controller, replicas, coordinators
    "metadata": 5, "replica": 5, "group": 5, "txn": 5, "share": 5,
    # one thin module per API key, on the client plane and on the controller plane
    "api": 6, "controller_server": 6,
    # the node and its listeners: wiring, client and controller listeners, HTTP services
    "node": 7, "server": 7, "http": 7, "console": 7, "metrics": 7,
    "container": 7,
    # the schema registry: a service on its own HTTP listener beside the broker
    "schema_registry": 7,
    # the REST gateway (Confluent REST Proxy API): a service on its own HTTP listener
    "rest_proxy": 7,
    # what runs the node, or runs beside it: command line, operations tools, testing support
    "tools": 8, "testing": 8, "__main__": 8,
}


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root`` (a package directory)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module a dotted name lands in (``pkg.mod.Class`` -> ``pkg.mod``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (itself excluded)."""
    modules = _modules(root)
    top = root.name
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # ``from pkg import mod`` imports the module pkg.mod; ``from mod import X``
                # imports mod
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source
                           for a in node.names]
            for target in targets:
                if target == top or target.startswith(top + "."):
                    found = _resolve(target, modules)
                    if found and found != name:
                        graph[name].add(found)
        graph.setdefault(name, set())
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(graph: dict[str, set[str]], ranks: dict[str, int]) -> list[str]:
    out = []
    for source, targets in sorted(graph.items()):
        a = _package(source)
        for target in sorted(targets):
            b = _package(target)
            if not a or not b or a == b:
                continue
            if a not in ranks or b not in ranks:
                unranked = a if a not in ranks else b
                out.append(f"{source} -> {target}: package {unranked!r} has no rank in RANKS")
            elif ranks[b] > ranks[a]:
                out.append(f"{source} -> {target}: {a} (rank {ranks[a]}) imports up into "
                           f"{b} (rank {ranks[b]})")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (the history checker's Tarjan)."""
    return sorted(sccs({module: sorted(targets) for module, targets in graph.items()}))


def check(root: Path, ranks: dict[str, int] = RANKS) -> list[str]:
    graph = import_graph(root)
    problems = layer_violations(graph, ranks)
    for component in cycles(graph):
        problems.append("import circle: " + " <-> ".join(component))
    return problems
