"""Exit codes of `orchestrator` (documented in the README; scripts and schedulers rely on them)."""

from __future__ import annotations

OK = 0
DECLINED = 1  # the operator answered no at apply's question: nothing was run
INVALID_SPEC = 2  # the spec is invalid: nothing was written, no host was touched
HOSTS_FAILED = 3  # a host failed (apply), or drift was found (drift)
DIAGNOSED = 3  # doctor: a known cause was found in a log
SLO_MISSED = 3  # bench: an SLO was missed or a request failed
HOSTS_UNREACHABLE = 4  # a host could not be reached (drift: and no drift was found on the others)
ENDPOINT_UNREACHABLE = 4  # bench: the endpoint did not accept a connection
USAGE = 64  # bad command line (EX_USAGE)
NO_SITE = 66  # no such site or spec file, or (doctor) an unreadable --log FILE (EX_NOINPUT)
INTERNAL = 70  # a bug in orchestrator (EX_SOFTWARE)
CANT_CREATE = 73  # render refused to overwrite a file it does not own (EX_CANTCREAT)
LOCKED = 75  # another run holds the site's lock: nothing was run (EX_TEMPFAIL: try again later)
INTERRUPTED = 130  # SIGINT / SIGTERM
