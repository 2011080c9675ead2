"""Start-up refusals: the NPU mask against the devices given, the model directory, the driver mounts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import Sandbox


def _refused(proc_stderr: str, exc_type: str) -> str:
    last = proc_stderr.rstrip().splitlines()
    assert last, "no error printed"
    assert "Traceback (most recent call last):" in proc_stderr
    joined = "\n".join(last)
    assert f"\n{exc_type}: " in "\n" + joined
    return joined


def test_mask_naming_a_device_not_given(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--tensor-parallel-size", "2"], mask="0,7")
    assert proc.popen.returncode == 1
    err = _refused(proc.stderr(), "RuntimeError")
    assert "ASCEND_RT_VISIBLE_DEVICES=0,7 names NPU 7" in err
    assert "input data rang[0-4)" in err  # the sandbox container was given davinci0..3
    assert not sandbox.process_table()


def test_mask_takes_logical_ids_of_the_devices_given(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    """CANN: inside a container ASCEND_RT_VISIBLE_DEVICES holds logical IDs 0..n-1 of the devices given; a
    container given davinci2 and davinci3 runs on physical 2 and 3 with mask 0,1 and refuses mask 2,3."""
    for n in (0, 1):
        (sandbox.dev / f"davinci{n}").unlink()
    bad = sandbox.run(["serve", str(checkpoints["a"]), "--tensor-parallel-size", "2"], mask="2,3")
    assert bad.popen.returncode == 1
    assert "input data rang[0-2)" in _refused(bad.stderr(), "RuntimeError")
    good = sandbox.start(["serve", str(checkpoints["a"]), "--tensor-parallel-size", "2"], mask="0,1")
    good.wait_healthy()
    assert sorted(sandbox.process_table()) == ["2", "3"]  # npu-smi shows the physical NPUs
    assert good.terminate() == 0


def test_mask_size_must_match_parallelism(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--tensor-parallel-size", "2"], mask="0,1,2")
    assert proc.popen.returncode == 1
    err = _refused(proc.stderr(), "RuntimeError")
    assert "ASCEND_RT_VISIBLE_DEVICES=0,1,2 makes 3 NPU(s) visible" in err
    assert "= 2 are needed" in err
    args = ["serve", str(checkpoints["a"]), "-tp", "2", "--data-parallel-size", "2"]
    assert sandbox.run(args, mask="0,1").popen.returncode == 1  # tp 2 x dp 2 needs 4
    assert "= 4 are needed" in sandbox.procs[-1].stderr()


@pytest.mark.parametrize("mask", [None, "", "0,x", "1,1"])
def test_mask_missing_or_malformed(sandbox: Sandbox, checkpoints: dict[str, Path], mask: str | None) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"])], mask=mask)
    assert proc.popen.returncode == 1
    assert "ASCEND_RT_VISIBLE_DEVICES" in _refused(proc.stderr(), "RuntimeError")


def test_management_devices_and_driver_mounts(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    (sandbox.dev / "davinci_manager").unlink()
    proc = sandbox.run(["serve", str(checkpoints["a"])])
    assert "davinci_manager is missing" in _refused(proc.stderr(), "RuntimeError")
    (sandbox.dev / "davinci_manager").touch()
    shutil.rmtree(sandbox.driver / "lib64")
    proc = sandbox.run(["serve", str(checkpoints["a"])])
    assert "libascend_hal.so" in _refused(proc.stderr(), "ImportError")


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_missing_shard(sandbox: Sandbox, checkpoints: dict[str, Path], tmp_path: Path) -> None:
    model = _copy(checkpoints["a"], tmp_path / "m")
    (model / "model-00002-of-00002.safetensors").unlink()
    proc = sandbox.run(["serve", str(model)])
    assert proc.popen.returncode == 1
    err = _refused(proc.stderr(), "FileNotFoundError")
    assert f"No such file or directory: '{model}/model-00002-of-00002.safetensors'" in err


def test_truncated_shard(sandbox: Sandbox, checkpoints: dict[str, Path], tmp_path: Path) -> None:
    model = _copy(checkpoints["a"], tmp_path / "m")
    shard = model / "model-00001-of-00002.safetensors"
    shard.write_bytes(shard.read_bytes()[:-100])
    proc = sandbox.run(["serve", str(model)])
    assert "Error while deserializing header: MetadataIncompleteBuffer" in _refused(
        proc.stderr(), "safetensors_rust.SafetensorError"
    )


def test_missing_config_and_quant_description(
    sandbox: Sandbox, checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    model = _copy(checkpoints["a"], tmp_path / "m")
    proc = sandbox.run(["serve", str(model), "--quantization", "ascend"])
    assert "Cannot find the config file for ascend" in _refused(proc.stderr(), "ValueError")
    (model / "config.json").unlink()
    proc = sandbox.run(["serve", str(model)])
    assert f"Invalid repository ID or local directory specified: '{model}'" in _refused(
        proc.stderr(), "ValueError"
    )


def test_parallelism_against_config(sandbox: Sandbox, checkpoints: dict[str, Path]) -> None:
    proc = sandbox.run(["serve", str(checkpoints["a"]), "-tp", "3"], mask="0,1,2")
    assert "must be divisible by tensor parallel size (3)" in _refused(proc.stderr(), "ValueError")
    proc = sandbox.run(["serve", str(checkpoints["a"]), "--max-model-len", "1000000"])
    assert "User-specified max_model_len (1000000)" in _refused(proc.stderr(), "ValueError")
