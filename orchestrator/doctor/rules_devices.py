"""Rules: container mounts and driver files, devices held by others, ASCEND_RT_VISIBLE_DEVICES and Ray.

Each rule cites the public reports its log line and fix were read from (research notes R1-R14)."""

from __future__ import annotations

from orchestrator.doctor.rule import Pattern, Preflight, Rule, p
from orchestrator.doctor.sources import FAQ, HIASCEND_CONTAINER, INSTALL, va, vap

_DRIVER_MOUNTS = (
    "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/ "
    "-v /usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info "
    "-v /etc/ascend_install.info:/etc/ascend_install.info -v /usr/local/dcmi:/usr/local/dcmi "
    "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi"
)
_RAY = r"\bRay\w*|\bray\b|RAY_|ray_distributed_executor|distributed[-_]executor[-_]backend[= ]+['\"]?ray"
"""A line showing the process runs under Ray (its prefixes, its logger, a `ray` version line, the flag)."""
_ASCENDING = r"must be configured in ascending order"
_DEVICE_COUNT_207004 = r"aclrtGetDeviceCount\(&device_count\), error code is 207004"

_BUSY_FIX = (
    "stop the other container or process holding /dev/davinciN (`npu-smi info` lists the processes; "
    "`docker ps -q | xargs docker inspect -f '{{.Name}} {{json .HostConfig.Devices}}'` the containers), or "
    "place the replica on a free NPU"
)

MOUNTS = (
    Rule(
        id="driver-lib64-not-mounted",
        area="container mounts",
        title="the NPU driver's user-space libraries are not mounted into the container",
        patterns=p(r"libascend_hal\.so: cannot open"),
        codes=(),
        cause="libascend_hal.so is the user-space part of the NPU driver; it lives in "
        "/usr/local/Ascend/driver/lib64/ on the host and is not in the image.",
        fix=f"mount the host driver into the container as the official docs do: {_DRIVER_MOUNTS}, plus "
        "--device /dev/davinciN --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc "
        "(the container's driver files must be the host's version).",
        preflight=Preflight.yes,
        sources=(*va(1440), INSTALL, HIASCEND_CONTAINER),
        example="libascend_hal.so: cannot open shared object file: No such file or directory",
    ),
    Rule(
        id="cann-env-not-sourced",
        area="CANN environment",
        title="the CANN toolkit is missing or its set_env.sh was not sourced",
        patterns=p(
            r"lib(?:hccl|ascendcl|ge_runner|opapi)\.so: cannot open",
            r"Please run 'source set_env\.sh'",
        ),
        codes=("ERR00008",),
        cause="torch_npu cannot load CANN's libraries: the toolkit is not installed, or LD_LIBRARY_PATH and "
        "friends were not set in the process that started vLLM (an overridden entrypoint that is not a "
        "login shell).",
        fix="source /usr/local/Ascend/ascend-toolkit/set_env.sh and /usr/local/Ascend/nnal/atb/set_env.sh in "
        "the command that starts vLLM (vllm-ascend FAQ 6), then check `python -c 'import torch_npu'` and "
        "`npu-smi info` in the container.",
        preflight=Preflight.yes,
        sources=(*va(262), "https://github.com/LinZhekai/X-Oscar/issues/4", FAQ),
        example="ImportError: libhccl.so: cannot open shared object file: No such file or directory. Please "
        "check that the cann package is installed. Please run 'source set_env.sh' in the CANN installation "
        "path.",
        inferred="libascendcl/libge_runner/libopapi are matched by analogy; only libhccl.so was seen.",
    ),
    Rule(
        id="nnal-atb-missing",
        area="CANN environment",
        title="NNAL (ATB) is not installed or its set_env.sh was not sourced",
        patterns=p(r"libatb\.so: cannot open"),
        codes=(),
        cause="torch_npu's ATB ops need libatb.so from the NNAL package, which is installed separately from "
        "the CANN toolkit.",
        fix="install the NNAL package matching CANN and source /usr/local/Ascend/nnal/atb/set_env.sh before "
        'starting vLLM (vllm-ascend installation guide: \'If you encounter "libatb.so not found" errors '
        "... ensure NNAL is properly installed').",
        preflight=Preflight.yes,
        sources=(*va(152, 10525, 2727), FAQ, INSTALL),
        example="OSError: libatb.so: cannot open shared object file: No such file or directory",
    ),
    Rule(
        id="driver-dir-partially-mounted",
        area="container mounts",
        title="only part of the driver or CANN tree is visible in the container",
        patterns=p(r"\bEI0014\b", r"driver/topo", r"platform_config' does not exist"),
        codes=("EI0014",),
        cause="HCCL reads topology files under /usr/local/Ascend/driver/topo and CANN resolves "
        "lib64/../data/platform_config; a mount of lib64 alone, or a CANN tree mounted across a mount "
        "point, hides them.",
        fix="bind-mount the whole /usr/local/Ascend/driver directory (Atlas 950/A5: recipes PR 907), and do "
        "not mount a host CANN over the image's; prefer the CANN bundled in the official image.",
        preflight=Preflight.yes,
        sources=("https://github.com/vllm-project/recipes/pull/907", *va(6336)),
        example="[ERROR] FE(2595,python3):2026-01-28-03:18:49.991.151 [platform_info.cpp:970]2595 "
        "RealPath:Path '/usr/local/Ascend/cann-8.5.0/aarch64-linux/lib64/../data/platform_config' does not "
        "exist.",
    ),
    Rule(
        id="driver-info-files-missing",
        area="container mounts",
        title="version.info or /etc/ascend_install.info is not mounted (checked before launch only)",
        patterns=(),
        codes=(),
        cause="every official docker run mounts /usr/local/Ascend/driver/version.info and "
        "/etc/ascend_install.info; tools in the image read them to find the driver.",
        fix="mount both files read-only from the host: -v /usr/local/Ascend/driver/version.info:"
        "/usr/local/Ascend/driver/version.info -v /etc/ascend_install.info:/etc/ascend_install.info.",
        preflight=Preflight.yes,
        sources=(INSTALL, *vap(49), "https://github.com/gpustack/gpustack/issues/1378"),
        inferred="no public log line for a missing file was found, so the log scan has no pattern for it.",
    ),
)

BUSY = (
    Rule(
        id="npu-occupied-dcmi-8005",
        area="device busy",
        title="the NPU is already held by another container (dcmi -8005)",
        patterns=p(r"dcmi module initiali[sz]e failed\. ret is -8005"),
        codes=("-8005",),
        cause="one NPU can be used by one ordinary (non-privileged) container at a time; another container "
        "or process holds /dev/davinciN.",
        fix=_BUSY_FIX + ".",
        preflight=Preflight.yes,
        sources=(
            *va(2698),
            "https://github.com/Project-HAMi/ascend-device-plugin/issues/23",
            "https://github.com/Project-HAMi/HAMi/issues/1696",
            HIASCEND_CONTAINER,
        ),
        example="dcmi module initialize failed. ret is -8005",
        inferred="--privileged was discussed as a workaround; its outcome was not visible.",
    ),
    Rule(
        id="npu-occupied-dcmi-8020",
        area="device busy",
        title="the NPU is used by another container (dcmi -8020)",
        patterns=p(r"dcmi model initiali[sz]ed failed, because the device is used\. ret is -8020"),
        codes=("-8020",),
        cause="the device is in use by another container or process (the message says so).",
        fix=_BUSY_FIX + ".",
        preflight=Preflight.yes,
        sources=(*va(632), "https://github.com/Ascend/cann-container-image/issues/46"),
        example="dcmi model initialized failed, because the device is used. ret is -8020",
    ),
    Rule(
        id="npu-shared-sqcq-exhausted",
        area="device busy",
        title="several vLLM processes on one NPU ran out of its stream (SQ/CQ) channels",
        patterns=p(
            r"halSqCqAllocate failed: device_id=\d+, drvRetCode=\d+",
            r"Alloc chan failed\. \(devid=\d+.*cur_sq_num=",
        ),
        codes=("drvRetCode=14",),
        cause="the per-device pool of stream queues is shared by every process on the NPU; graph capture "
        "creates many streams, so a second replica on the same NPU exhausts it.",
        fix="run one vLLM replica per NPU; replicas that must share an NPU need --enforce-eager or fewer "
        "cudagraph_capture_sizes.",
        preflight=Preflight.partly,
        sources=va(5213, 5650),
        example="[ERROR] RUNTIME(6651,):2025-12-20-12:52:31.887.683 [npu_driver.cc:1065]6651 "
        "NormalSqCqAllocate:[drv api] halSqCqAllocate failed: device_id=3, drvRetCode=14!",
        inferred="the eager/capture-size mitigation for co-located replicas is taken from the graph-capture "
        "FAQ, not from these reports.",
        related=("aclgraph-stream-exhausted",),
    ),
    Rule(
        id="set-device-507033",
        area="device busy",
        title="the NPU could not be opened (507033); the next distinctive line names why",
        patterns=p(
            r"(?:SetDevice\(device_id_?\), error code is|open device \d+ failed, runtime result = "
            r"|set device \d+ failed, errorCode = |aclrtSetDevice\(\w+\) failed: )\s*507033",
        ),
        codes=("507033",),
        cause="the runtime could not open the device (its TSD/AICPU process did not start). Several causes "
        "share 507033: an operator package the device rejects (E30006), a device held or unhealthy, a "
        "visible-devices mismatch.",
        fix="look at the lines after it for E30006 (opp-verify-failed) or a visible-devices error; otherwise "
        "check `npu-smi info` (Health must be OK) and reboot after a driver or firmware upgrade.",
        preflight=Preflight.partly,
        sources=(
            *va(1558),
            "https://github.com/hw-native-sys/PTOAS/pull/1037",
            "https://github.com/Ascend/samples/issues/16",
        ),
        example="RuntimeError: Initialize:torch_npu/csrc/core/npu/sys_ctrl/npu_sys_ctrl.cpp:146 NPU function "
        "error: c10_npu::SetDevice(device_id_), error code is 507033",
        inferred="the reboot advice and 'TsdOpen failed means busy or unhealthy' are not from a source.",
        generic=True,
        related=("opp-verify-failed", "visible-device-invalid-107001", "ray-dp-visible-range"),
    ),
    Rule(
        id="opp-verify-failed",
        area="CANN versions",
        title="the device rejected the operator package (OPP): E30006",
        patterns=p(r"\bE30006\b.*Failed to verify the OPP"),
        codes=("E30006", "507033"),
        cause="the operator package (part of CANN) does not match what the device and driver accept.",
        fix="install the CANN toolkit and kernels (OPP) that match the host driver (vllm-ascend's "
        "compatibility matrix); do not mix a host CANN with the image's.",
        preflight=Preflight.yes,
        sources=va(4284),
        example="E30006: 2025-11-19-11:14:58.516.606 Failed to verify the OPP",
        inferred="'do not mix host and container CANN' is not from the report.",
        priority=60,
    ),
)

VISIBLE = (
    Rule(
        id="visible-device-invalid-107001",
        area="visible devices / Ray",
        title="a physical NPU id was used after ASCEND_RT_VISIBLE_DEVICES narrowed the set (107001)",
        patterns=p(
            r"Set visible device failed, invalid device=\d+, input visible devices:[\d,]+",
            r"runtime result = 107001",
        ),
        codes=("107001",),
        cause="Ray set ASCEND_RT_VISIBLE_DEVICES to one NPU per worker, then vLLM asked for logical device "
        "N>0 of a one-device set.",
        fix="export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 before `ray start` on every node "
        "(vllm-ascend 168; the name has no _ENV_VAR suffix), and keep every device index below the length "
        "of ASCEND_RT_VISIBLE_DEVICES.",
        preflight=Preflight.yes,
        sources=(
            *va(167, 168),
            "https://github.com/gpustack/gpustack/issues/3352",
            *va(1578),
            *vap(10127),
        ),
        example="The argument is invalid.Reason: Set visible device failed, invalid device=1, input visible "
        "devices:1",
    ),
    Rule(
        id="invalid-device-id-assert",
        area="visible devices / Ray",
        title="vLLM asserted on a device id (non-contiguous ASCEND_RT_VISIBLE_DEVICES)",
        patterns=p(r"AssertionError: Invalid device id", r"Invalid device ID"),
        codes=(),
        cause="a logical-versus-physical device id mix-up when the visible list is not a contiguous 0..n "
        "range (e.g. ASCEND_RT_VISIBLE_DEVICES=0,1,2,5).",
        fix="use a contiguous ASCEND_RT_VISIBLE_DEVICES list, or a vllm-ascend release with the fix.",
        preflight=Preflight.yes,
        sources=(*va(449), *vap(10125)),
        example="AssertionError: Invalid device id",
        inferred="the release that fixes it was not verified.",
    ),
    Rule(
        id="ray-dp-visible-range",
        area="visible devices / Ray",
        title="a data-parallel rank's device range is outside the node's visible NPUs",
        patterns=p(r"Error setting ASCEND_RT_VISIBLE_DEVICES: local range: \[\d+, \d+\) base value"),
        codes=(),
        cause="the DP rank's local device range was computed globally (8..12) while each node exposes only "
        "its own NPUs (0..7): --data-parallel-size-local / --data-parallel-start-rank do not match the node.",
        fix="pass --data-parallel-size-local and --data-parallel-start-rank per node (with "
        "--data-parallel-address and --data-parallel-rpc-port) so each node's ranks fit its visible NPUs.",
        preflight=Preflight.yes,
        sources=va(2879, 1060),
        example="Exception: Error setting ASCEND_RT_VISIBLE_DEVICES: local range: [8, 12) base value: "
        '"0,1,2,3,4,5,6,7"',
    ),
    Rule(
        id="visible-devices-not-ascending",
        area="visible devices / Ray",
        title="ASCEND_RT_VISIBLE_DEVICES is not in ascending order (EE1001, then 207004)",
        patterns=(
            Pattern(r"ASCEND_RT_VISIBLE_DEVICES:[\d,\s]+ error, it must be configured in ascending order"),
            Pattern(_DEVICE_COUNT_207004, near=_ASCENDING),
        ),
        codes=("EE1001", "207004"),
        cause="CANN accepts ASCEND_RT_VISIBLE_DEVICES only in ascending order; with any other order the "
        "runtime reports no usable device (aclrtGetDeviceCount returns 207004, torch.npu.is_available() is "
        "False), which reads like a Ray or driver problem.",
        fix="list the NPUs in ascending order (0,1,2,3,4,5,6,7, not 0,2,4,6,1,3,5,7); to put ranks on "
        "particular NPUs, order the ranks, not the variable.",
        preflight=Preflight.yes,
        sources=(
            "https://github.com/gpustack/gpustack/issues/2527",
            "https://github.com/agentscope-ai/Trinity-RFT/pull/618",
        ),
        example="EE1001: [PID: 112081] 2025-07-17-08:06:53.296.370 The argument is invalid.Reason: set "
        "ASCEND_RT_VISIBLE_DEVICES:0,2,4,6,1,3,5,7 error, it must be configured in ascending order",
        detail=r"ASCEND_RT_VISIBLE_DEVICES:(?P<devices>[\d,]+) error",
        hint="this process had ASCEND_RT_VISIBLE_DEVICES={devices}",
        priority=70,
        related=("ray-device-count-207004",),
    ),
    Rule(
        id="ray-device-count-207004",
        area="visible devices / Ray",
        title="a Ray-launched engine saw no usable NPU (207004)",
        patterns=(Pattern(_DEVICE_COUNT_207004, near=_RAY),),
        codes=("207004",),
        cause="with Ray managing a multi-NPU node only the first engine started: the next engines saw no "
        "(or unsuitable) devices through Ray's visible-devices handling.",
        fix="use --distributed-executor-backend mp for one engine per process, or a vllm-ascend release with "
        "lazy device init (PR 1234).",
        preflight=Preflight.partly,
        sources=(*va(322), *vap(1234)),
        example="RuntimeError: init:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:285 NPU function "
        "error: aclrtGetDeviceCount(&device_count), error code is 207004",
        inferred="207004 is named a Ray problem only with a Ray line (RayWorkerWrapper, "
        "ray_distributed_executor, a ray version) within 50 lines: a non-ascending ASCEND_RT_VISIBLE_DEVICES "
        "prints the same code without Ray (gpustack 2527), and that log must not be called a Ray problem.",
        related=("visible-devices-not-ascending",),
    ),
    Rule(
        id="ray-no-npu-resource",
        area="visible devices / Ray",
        title='Ray offered the engine no NPU on its node ("Current node has no NPU available")',
        patterns=p(r"Current node has no NPU available"),
        codes=(),
        cause="vLLM's Ray executor found no free NPU resource on the node it runs on: Ray registered the "
        "node's devices as GPUs (ray start --num-gpus) or not at all, or every NPU is already held by a "
        "placement group of another engine.",
        fix="make Ray register the NPUs on every node (`ray status` must list NPU, not GPU: Ray detects "
        "Ascend NPUs when the driver is visible in its container, else declare them with "
        "`ray start ... --resources='{\"NPU\": 8}'`), and restart Ray to drop stale placement groups before "
        "starting vLLM.",
        preflight=Preflight.partly,
        sources=(*va(3114), "https://github.com/ray-project/ray/issues/55137"),
        example="ValueError: Current node has no NPU available. current_node_resource={'memory': 215",
        detail=r"'GPU': (?P<gpus>[\d.]+)",
        hint="Ray registered {gpus} GPUs and no NPU on this node (ray start --num-gpus)",
        inferred="the ray start flags of the fix are not from the thread; the placement-group cause is read "
        "from the vLLM check that raises the error.",
        related=("ray-device-count-207004", "ray-dp-visible-range"),
    ),
)
