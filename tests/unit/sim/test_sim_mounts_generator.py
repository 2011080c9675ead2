"""The simulated server's systemd generator
(ascend_sim/payloads/sim-server/systemd/ascend-sim-mounts-generator): every mount the container runtime made
(the machine's disks) and the emulated kernel's own mounts get DefaultDependencies=no, so systemd does not
unmount them on the way to a reboot; the API file systems, the root and /run's other mounts stay systemd's
(systemd.generator(7), systemd.mount(5) "Default Dependencies"). Unit names come from systemd's own
systemd-escape."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SYSTEMD = Path(__file__).resolve().parents[3] / "ascend_sim" / "payloads" / "sim-server" / "systemd"
GENERATOR = SYSTEMD / "ascend-sim-mounts-generator"

# /proc/self/mountinfo of a simulated server (proc(5) format: the mount point is the fifth field)
MOUNTINFO = """\
900 800 0:50 / / rw,relatime master:1 - overlay overlay rw
901 900 0:52 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
902 901 0:60 / /proc/sys rw,relatime - fuse.ascend-kernel ascend-kernel rw
903 900 0:53 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
904 903 0:54 / /dev/pts rw,nosuid,noexec,relatime - devpts devpts rw
905 900 0:55 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro
906 905 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw
907 900 0:56 / /run rw,relatime - tmpfs tmpfs rw,mode=755
908 907 0:57 / /run/lock rw,relatime - tmpfs tmpfs rw
909 900 0:58 / /data rw,relatime - tmpfs tmpfs rw,size=8g
910 900 8:1 /docker/volumes/x/_data /var/lib/docker rw,relatime - ext4 /dev/sda1 rw
911 900 8:1 /containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/sda1 rw
912 900 8:1 /fabric /var/lib/ascend-sim/fabric rw,relatime - ext4 /dev/sda1 rw
"""


def escape(path: str) -> str:
    done = subprocess.run(["systemd-escape", "--path", "--suffix=mount", path], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def test_the_machines_disks_and_the_kernels_mounts_are_kept_across_a_reboot(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    out = tmp_path / "generator"
    subprocess.run(["sh", str(GENERATOR), str(out)], env={**os.environ, "ASCEND_SIM_MOUNTINFO": str(info)},
                   check=True)  # fmt: skip
    kept = {
        "/data", "/var/lib/docker", "/etc/hosts", "/var/lib/ascend-sim/fabric",
        # /proc/sys is the kernel's bind of /run/ascend-sim/proc/sys (the recursive bind carries it)
        "/run/ascend-sim/proc/sys", "/run/ascend-sim/proc", "/run/ascend-sim/kernel/fs",
    }  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{escape(p)}.d" for p in kept)
    for path in kept:
        dropin = out / f"{escape(path)}.d" / "ascend-sim.conf"
        assert dropin.read_text() == "[Unit]\nDefaultDependencies=no\n"
