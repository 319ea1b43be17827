"""Read a Prometheus text page (``/metrics``) for tests: ``{(name, labels): value}``."""
from __future__ import annotations

import re
import urllib.error
import urllib.request

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[tuple[str, frozenset], float]:
    out = {}
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset((k, v.encode().decode("unicode_escape"))
                           for k, v in _LABEL.findall(m.group(3) or ""))
        key = (m.group(1), labels)
        assert key not in out, f"duplicate series {line!r}"
        out[key] = float(m.group(4).replace("+Inf", "inf"))
    return out


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())), 0.0)


def total(samples, name: str, **labels) -> float:
    """Sum over every series of ``name`` whose labels include ``labels``."""
    want = {(k, str(v)) for k, v in labels.items()}
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def http_get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def scrape(url: str):
    status, text = http_get(url)
    assert status == 200, (status, text)
    return parse(text)
