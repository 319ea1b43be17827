"""``python -m kbroker`` — see ``kbroker.cli``."""
import sys

from kbroker.cli import main

if __name__ == "__main__":
    sys.exit(main())
