"""``python -m kbroker`` — see ``kbroker.tools.cli``."""
import sys

from kbroker.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
