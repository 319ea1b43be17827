"""The CLI scenarios (compat_tests/kbroker_cli.py) assert in a helper module: have pytest
rewrite its asserts so a failure shows the compared values."""
import pytest

pytest.register_assert_rewrite("compat_tests.kbroker_cli")
