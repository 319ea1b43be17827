"""``python -m kbroker`` — see ``kbroker.tools.cli``."""
import sys

if sys.argv[1:2] == ["serve"]:
    # a broker's start imports its modules from one file (kbroker.common.modimage), the
    # command line's own included
    from kbroker.common import modimage
    modimage.install()

from kbroker.tools.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
