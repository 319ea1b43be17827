"""``python -m kbroker`` — see ``kbroker.tools.cli``."""
import sys

if sys.argv[1:2] == ["serve"]:
    # a broker's start, before the command line's own imports: its modules from one file
    # (kbroker.common.modimage), the bodies of standard modules a plain node does not use
    # (OpenSSL's...) run at their first use (deferred), no cyclic collection while they
    # load (startup_gc), the
    # code classes generate and the regular expressions from the build's cache (codecache);
    # the command line does the last two itself when called otherwise
    from kbroker.common import deferred, modimage
    modimage.install()
    deferred.install()
    from kbroker.common import codecache, startup_gc
    startup_gc.pause()
    codecache.install()

from kbroker.tools.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
