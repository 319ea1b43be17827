"""The image itself: what it adds above its base stays within the budget of issue 21 (60 MB),
it runs as a fixed non-root user, and its ENTRYPOINT takes `kbroker serve` arguments."""
import os

import pytest

from .conftest import IMAGE, logs

BUDGET_MB = 60


def test_the_image_adds_less_than_60_mb_above_its_base(dk):
    base = os.environ.get("KBROKER_BASE_IMAGE")
    if not base:
        pytest.fail("KBROKER_BASE_IMAGE (the base the image was built FROM) is not set; "
                    "run through `make docker-test`")
    added = (dk.images.get(IMAGE).attrs["Size"] - dk.images.get(base).attrs["Size"]) / 1e6
    assert added < BUDGET_MB, f"{IMAGE} adds {added:.1f} MB above {base}"


def test_fixed_non_root_user_and_entrypoint_arguments(dk, lab):
    cfg = dk.images.get(IMAGE).attrs["Config"]
    assert cfg["User"] == "kbroker" and cfg["Cmd"] == ["serve"] and cfg["Healthcheck"]["Test"]
    assert "/var/lib/kbroker" in cfg["Volumes"]
    c = lab.run(command=["id"])                           # another command runs as given
    assert c.wait(timeout=60)["StatusCode"] == 0
    assert logs(c).startswith("uid=1000(kbroker) gid=1000(kbroker)")
    c = lab.run(command=["--log-level", "NOPE"])          # serve arguments after the image name
    assert c.wait(timeout=60)["StatusCode"] == 2
    assert "--log-level" in logs(c)
