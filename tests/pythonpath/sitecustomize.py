"""Loaded at start by every Python process of the test suite (tests/conftest.py puts this folder first on
PYTHONPATH): the test controller's AnsiballZ payload cache (ascend_testbed_ansiballz.py), then the
sitecustomize this one shadows, if the interpreter has one."""

from __future__ import annotations

import os
import sys

import ascend_testbed_ansiballz

ascend_testbed_ansiballz.install()

_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _other = os.path.join(_entry, "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _here and os.path.isfile(_other):
        with open(_other, encoding="utf-8") as _f:
            exec(compile(_f.read(), _other, "exec"), {"__name__": "sitecustomize", "__file__": _other})
        break
