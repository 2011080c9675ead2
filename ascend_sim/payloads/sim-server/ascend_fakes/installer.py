#!/usr/bin/env python3
"""Installer of the simulated HDK `.run` packages, run by the makeself-style header of
ascend_sim.packages from the extracted payload (package.json, version.info, ascend-sim/*.py):
parses the session (install_session.py) and runs the driver or firmware flow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

# Standalone script: find its siblings beside the real file, in the installed driver, or in the server image.
_HERE, _ROOT = os.path.dirname(os.path.realpath(__file__)), os.environ.get("ASCEND_SIM_ROOT") or "/"
sys.path[:0] = [_HERE, f"{_ROOT}/usr/local/Ascend/driver/tools/ascend-sim", "/opt/ascend-sim/fakes"]
if TYPE_CHECKING:
    from ascend_fakes import installer_driver, installer_firmware
    from ascend_fakes.install_session import Exit, Session
else:
    import installer_driver
    import installer_firmware
    from install_session import Exit, Session


def _flow(tag: str) -> Callable[[Session], None]:
    return installer_driver.run if tag == "Driver" else installer_firmware.run


def main(argv: list[str]) -> int:
    pkgdir = os.environ.get("ASCEND_SIM_PKGDIR") or os.path.dirname(
        os.path.dirname(os.path.realpath(__file__))
    )
    session = Session(pkgdir, argv)
    try:
        _flow(session.tag)(session)
    except Exit as done:
        return done.rc
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
