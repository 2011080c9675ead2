"""The preflight and drivers phases on a simulated cluster (2 x Atlas 800T A2; a2-02 ships with the spec's
firmware already flashed at the factory, which leaves no firmware version.info), with plain
ansible-playbook and the rendered inventory: preflight green, fresh converge (driver, then firmware, reboot
allowed by the spec; a2-02 keeps its factory firmware and needs no reboot), a second run changes nothing,
check mode after converge reports nothing, a package whose sha256 is not the spec's is refused before
anything runs, a missing NPU card fails preflight with a fix."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.sim.sim_helpers import REPO, Sim, ansible_playbook, module_cluster, recap

pytestmark = pytest.mark.integration

SERVERS = ("a2-01", "a2-02")
FACTORY_CURRENT = "a2-02"  # `sim up --current-firmware 1`: the last NPU server
DRIVER, FIRMWARE = "25.5.1", "7.8.0.6.201"  # the sim's packages (ascend_sim/spec_writer.py)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    yield from module_cluster(
        tmp_path_factory, "drv", "--nodes", "2", "--no-image-base", "--current-firmware", "1"
    )


@pytest.fixture(scope="module")
def site(cluster: Sim) -> str:
    """The site `sim up` wrote: its spec carries the drivers-phase policies a simulated server needs (the
    containers run the controller's kernel: headers provided; share its clock and disk: time sync warn, small
    reserves; the firmware takes effect after a reboot: allowed, one server at a time)."""
    return cluster.name


def playbook(cluster: Sim, site: str, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return ansible_playbook(cluster.root, f"inventories/{site}/hosts.yml", name, *args)


def green(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, int]]:
    stats = recap(proc.stdout)
    assert proc.returncode == 0 and set(stats) == set(SERVERS), proc.stdout[-4000:] + proc.stderr[-2000:]
    assert all(s["failed"] == 0 and s["unreachable"] == 0 for s in stats.values()), proc.stdout[-4000:]
    return stats


def version_info(cluster: Sim, server: str, kind: str) -> str:
    text = cluster.exec(server, f"cat /usr/local/Ascend/{kind}/version.info 2>/dev/null || true")
    m = re.search(r"(?m)^Version=(\S+)", text)
    return m.group(1) if m else ""


def test_preflight_passes_on_the_fresh_servers(cluster: Sim, site: str) -> None:
    stats = green(playbook(cluster, site, "preflight.yml"))
    assert {h: s["changed"] for h, s in stats.items()} == dict.fromkeys(SERVERS, 0)


def test_fresh_converge_installs_driver_then_firmware_and_reboots(cluster: Sim, site: str) -> None:
    boot_ids = {s: cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS}
    assert [version_info(cluster, s, "driver") for s in SERVERS] == ["", ""]  # a fresh box
    proc = playbook(cluster, site, "drivers.yml")
    stats = green(proc)
    assert all(s["changed"] > 0 for s in stats.values())
    for server in SERVERS:
        factory = server == FACTORY_CURRENT  # its firmware was already the spec's: nothing to install
        assert (version_info(cluster, server, "driver"), version_info(cluster, server, "firmware")) == (
            DRIVER,
            "" if factory else FIRMWARE,
        )
        # the firmware takes effect at boot: the server was rebooted (not the one whose factory firmware
        # was current: its driver took effect at once), and npu-smi now runs the new pair
        rebooted = cluster.exec(server, "cat /var/lib/ascend-sim/boot_id") != boot_ids[server]
        assert rebooted != factory, server
        board = cluster.exec(server, "npu-smi info -t board -i 0")
        assert re.search(rf"Software Version\s*:\s*{re.escape(DRIVER)}\b", board), board
        assert re.search(rf"Firmware Version\s*:\s*{re.escape(FIRMWARE)}\b", board), board
        assert "HwHiAiUser" in cluster.exec(server, "id HwHiAiUser")
    # Huawei's order on a fresh host: the driver, then the firmware (it needs the driver's upgrade-tool)
    order = [t for t in re.findall(r"TASK \[[^]]*\] \*", proc.stdout) if "install or upgrade the" in t]
    # the play rolls one server at a time here (serial [1, software.reboot.batch_size 1]): once per batch
    pair = [(True, False), (False, True)]
    assert [("driver" in t, "firmware" in t) for t in order] == pair * len(SERVERS), order


def test_second_run_changes_nothing(cluster: Sim, site: str) -> None:
    boot_ids = {s: cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS}
    stats = green(playbook(cluster, site, "drivers.yml"))
    assert {h: s["changed"] for h, s in stats.items()} == dict.fromkeys(SERVERS, 0)
    assert {s: cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS} == boot_ids


def test_check_mode_after_converge_reports_no_change(cluster: Sim, site: str) -> None:
    for name in ("preflight.yml", "drivers.yml"):
        stats = green(playbook(cluster, site, name, "--check", "--diff"))
        assert {h: s["changed"] for h, s in stats.items()} == dict.fromkeys(SERVERS, 0), name


def test_wrong_checksum_is_refused_before_anything_runs(cluster: Sim, site: str) -> None:
    """A driver package that is not the one the spec names (same file name, other bytes) is refused on
    the controller: nothing is copied, nothing executes, the hosts keep the verified package."""
    spec_path = cluster.root / "inventories" / site / "site.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    good = Path(spec["software"]["driver"]["path"])
    evil_dir = cluster.root / "evil"
    evil_dir.mkdir()
    evil = evil_dir / good.name
    evil.write_text("#!/bin/sh\ntouch /tmp/tampered-package-ran\nexit 0\n")
    bad_site = f"{site}-bad"
    inv = cluster.root / "inventories" / bad_site
    inv.mkdir()
    text = (
        spec_path.read_text().replace(str(good), str(evil)).replace(f"site: {site}\n", f"site: {bad_site}\n")
    )
    (inv / "site.yaml").write_text(text)
    cluster.cli("render", bad_site)
    cached = f"/var/cache/ascend-orchestrator/packages/{good.name}"
    before = {s: cluster.exec(s, f"sha256sum {cached}").split()[0] for s in SERVERS}
    proc = playbook(cluster, bad_site, "drivers.yml")
    assert proc.returncode != 0
    stats = recap(proc.stdout)
    # every server stages in parallel before any batch: the refusal stops them all, nothing is installed
    assert {h: (s["failed"], s["changed"]) for h, s in stats.items()} == dict.fromkeys(SERVERS, (1, 0))
    assert "install or upgrade the" not in proc.stdout
    actual = hashlib.sha256(evil.read_bytes()).hexdigest()
    for server in SERVERS:
        msg = re.search(rf"fatal: \[{server}\]: FAILED! => (\{{.*\}})", proc.stdout)
        assert msg, proc.stdout[-3000:]
        text = json.loads(msg.group(1))["msg"]
        assert (
            f"its sha256 is {actual}" in text and "Nothing was copied or executed" in text and "Fix:" in text
        )
    for server in SERVERS:
        assert (
            cluster.exec(server, "ls /tmp/tampered-package-ran 2>&1 || true")
            .strip()
            .endswith("No such file or directory")
        )
        assert cluster.exec(server, f"sha256sum {cached}").split()[0] == before[server]
    assert not Path("/tmp/tampered-package-ran").exists()


def test_incompatible_pair_is_refused_before_install(cluster: Sim, site: str) -> None:
    """A firmware upgrade whose version.info accepts no driver the spec pairs it with (compatible_version_drv
    [26.0.0,26.9.9] against driver 25.5.1): refused on every server before any installer runs."""
    from ascend_sim.packages import build_package, sha256_of
    from ascend_sim.spec_writer import ARCH

    spec_path = cluster.root / "inventories" / site / "site.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    old = spec["software"]["firmware"]
    newer = "7.8.0.7.100"
    pkg = build_package(
        "firmware", "910b", newer, cluster.root / "narrow", arch=ARCH, compatible="[26.0.0,26.9.9]"
    )
    pair_site = f"{site}-pair"
    inv = cluster.root / "inventories" / pair_site
    inv.mkdir()
    text = spec_path.read_text().replace(f"site: {site}\n", f"site: {pair_site}\n")
    text = text.replace(old["path"], str(pkg)).replace(old["sha256"], sha256_of(pkg))
    text = text.replace(f"version: {old['version']}", f"version: {newer}")
    (inv / "site.yaml").write_text(text)
    cluster.cli("render", pair_site)
    boot_ids = {s: cluster.exec(s, "cat /var/lib/ascend-sim/boot_id") for s in SERVERS}
    proc = playbook(cluster, pair_site, "drivers.yml")
    assert proc.returncode != 0
    # the first batch (one server) is refused and the rollout stops there
    failed = {h: s["failed"] for h, s in recap(proc.stdout).items()}
    assert failed == {SERVERS[0]: 1} | dict.fromkeys(SERVERS[1:], 0)
    for server in SERVERS:  # the factory firmware leaves no version.info
        assert version_info(cluster, server, "firmware") == ("" if server == FACTORY_CURRENT else FIRMWARE)
        assert cluster.exec(server, "cat /var/lib/ascend-sim/boot_id") == boot_ids[server]
    for server in SERVERS[:1]:
        line = re.search(rf"(?m)^failed: \[{server}\] \(item=firmware {newer}\) => .*$", proc.stdout)
        assert line, proc.stdout[-3000:]
        assert f"refusing the pair: the firmware {newer} accepts driver versions [26.0.0,26.9.9]" in line[0]
        assert "Nothing was installed" in line[0] and '"installer_rc": null' in line[0]


def test_a_process_holding_the_npus_stops_the_upgrade_before_the_installer(cluster: Sim, site: str) -> None:
    """A driver upgrade while a process holds /dev/davinci0 on a2-01 (the installer's checkUserProcess would
    refuse with "The davinci nodes are occupied by some processes"): the role finds it first, names its pid
    and command, and installs nothing; a2-02 is in a later batch and is not touched. The new driver is an RC
    release written as Huawei's portal writes it (26.0.RC1) while the package and the host say 26.0.rc1: the
    upgrade verifies and a check run afterwards reports nothing to do."""
    from ascend_sim.packages import build_package, sha256_of
    from ascend_sim.spec_writer import ARCH

    spec_path = cluster.root / "inventories" / site / "site.yaml"
    old = yaml.safe_load(spec_path.read_text())["software"]["driver"]
    newer, portal = "26.0.rc1", "26.0.RC1"
    pkg = build_package("driver", "910b", newer, cluster.root / "newer-driver", arch=ARCH)
    up_site = f"{site}-upgrade"
    (cluster.root / "inventories" / up_site).mkdir()
    text = spec_path.read_text().replace(f"site: {site}\n", f"site: {up_site}\n")
    text = text.replace(old["path"], str(pkg)).replace(old["sha256"], sha256_of(pkg))
    text = text.replace(f"version: {old['version']}", f"version: {portal}")
    (cluster.root / "inventories" / up_site / "site.yaml").write_text(text)
    cluster.cli("render", up_site)
    holder = "import time; f = open('/dev/davinci0'); time.sleep(600)"
    pid = cluster.exec("a2-01", f'setsid python3 -c "{holder}" >/dev/null 2>&1 < /dev/null & echo $!').strip()
    try:
        proc = playbook(cluster, up_site, "drivers.yml")
    finally:
        cluster.exec("a2-01", f"kill {pid}")
    assert proc.returncode != 0
    assert {h: s["failed"] for h, s in recap(proc.stdout).items()} == {"a2-01": 1, "a2-02": 0}
    line = re.search(r"(?m)^fatal: \[a2-01\]: FAILED! => .*$", proc.stdout)
    assert line, proc.stdout[-3000:]
    assert f"pid {pid} (python3 -c import time" in line[0] and "on /dev/davinci0" in line[0]
    assert "Nothing was installed" in line[0]
    before_failure = proc.stdout.split("fatal: [a2-01]")[0].split("processes that")[-1]
    assert "install or upgrade the driver" not in before_failure
    for server in SERVERS:
        assert version_info(cluster, server, "driver") == DRIVER
    # A service the plan names as a holder (rendered npu_driver_holder_services: the npu-exporter when the
    # monitoring phase installs it) is stopped for the upgrade and started again after it.
    unit = "/etc/systemd/system/npu-exporter.service"
    cluster.exec("a2-01", f"cat > {unit} <<'EOF'\n{HOLDER_UNIT}EOF\n"
                          "systemctl daemon-reload && systemctl start npu-exporter")  # fmt: skip
    main_pid = "systemctl show -p MainPID --value npu-exporter"
    before = cluster.exec("a2-01", main_pid).strip()
    proc = playbook(cluster, up_site, "drivers.yml", "-e", '{"npu_driver_holder_services": ["npu-exporter"]}')
    green(proc)
    assert re.search(r"(?m)^changed: \[a2-01\] => \(item=npu-exporter\)", proc.stdout), proc.stdout[-3000:]
    assert all(version_info(cluster, s, "driver") == newer for s in SERVERS)
    after = cluster.exec("a2-01", f"systemctl is-active --quiet npu-exporter && {main_pid}")
    assert after.strip() not in ("", "0", before)  # running again, a new process
    cluster.exec("a2-01", f"systemctl stop npu-exporter; rm -f {unit}; systemctl daemon-reload")
    stats = green(playbook(cluster, up_site, "drivers.yml", "--check"))
    assert {h: s["changed"] for h, s in stats.items()} == dict.fromkeys(SERVERS, 0), stats


# A service that holds /dev/davinci0 while it runs, as the npu-exporter does (its DCMI handles).
HOLDER_UNIT = """[Unit]
Description=stand-in for the npu-exporter: holds /dev/davinci0

[Service]
ExecStart=/usr/bin/python3 -c "import time; f = open('/dev/davinci0'); time.sleep(3600)"
"""


def test_missing_npu_card_fails_preflight_with_a_fix(cluster: Sim, site: str) -> None:
    """One card of a2-02 drops off the PCI bus (hardware.json loses it): preflight fails that server, says
    what it saw, what the spec wants and how to fix it; a2-01 passes."""
    hw_path = "/var/lib/ascend-sim/hardware.json"
    original = cluster.exec("a2-02", f"cat {hw_path}")
    hw = json.loads(original)
    hw.update(cards=hw["cards"] - 1, bus_ids=hw["bus_ids"][:-1])
    cluster.exec("a2-02", f"cat > {hw_path} <<'EOF'\n{json.dumps(hw)}\nEOF")
    try:
        proc = playbook(cluster, site, "preflight.yml")
    finally:
        cluster.exec("a2-02", f"cat > {hw_path} <<'EOF'\n{original.strip()}\nEOF")
    stats = recap(proc.stdout)
    assert proc.returncode != 0
    assert (stats["a2-01"]["failed"], stats["a2-02"]["failed"]) == (0, 1)
    msg = re.search(r"fatal: \[a2-02\]: FAILED! => (\{.*\})", proc.stdout)
    assert msg, proc.stdout[-3000:]
    text = json.loads(msg.group(1))["msg"]
    assert "shows 7 PCI function(s) 19e5:d802 (910B3), the spec expects 8" in text
    assert "lspci -n -d 19e5:d802" in text and "Fix:" in text


def test_no_role_asks_whether_it_runs_in_the_simulator() -> None:
    roles = REPO / "roles"
    ours = ("preflight", "npu_driver", "npu_firmware")
    texts = [p.read_text() for p in roles.rglob("*.yml") if p.relative_to(roles).parts[0] in ours]
    assert len(texts) >= 15  # tasks, defaults, meta and handlers of the three roles
    assert not any(re.search(r"(?i)ascend.sim|simulat", t) for t in texts)
