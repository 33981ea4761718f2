"""Whether this node's NVIDIA driver runs the image's CUDA, asked before torchrun starts.

A driver too old for torch's CUDA does not fail loudly: torch reports no GPU, and the trainer would fall back to
gloo on the CPU. The GPU Job's pods therefore run `python -m workloads.fsdp.cuda_check` first; it stops the pod
with `DRIVER_EXIT_CODE`, which the Job's podFailurePolicy turns into a failed Job instead of retries that each
wait for capacity (components/jobs/torch_workloads.py).
"""

from __future__ import annotations

import ctypes
import sys

import torch

DRIVER_EXIT_CODE = 78  # EX_CONFIG: the node's software, not the run, is wrong


def driver_cuda_version() -> tuple[int, int] | None:
    """The newest CUDA the loaded driver runs (`cuDriverGetVersion`), or None without a driver."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int()
    if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value // 1000, version.value % 1000 // 10


def driver_version() -> str | None:
    """The driver's own version as nvidia-smi prints it (NVML), what trainyard:gpuPools[].driverVersion states;
    None without NVML."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if nvml.nvmlInit_v2() != 0:
        return None
    try:
        buffer = ctypes.create_string_buffer(96)
        return buffer.value.decode() if nvml.nvmlSystemGetDriverVersion(buffer, len(buffer)) == 0 else None
    finally:
        nvml.nvmlShutdown()


def cuda_problem(driver: tuple[int, int] | None, runtime: str | None, gpus_seen: bool) -> str | None:
    """Why torch built for CUDA `runtime` (None: a CPU build) cannot use this node's GPUs; None when it can.

    Within a CUDA major a newer runtime runs on an older driver (NVIDIA's minor-version compatibility), so only
    the majors are compared."""
    if runtime is None:
        return f"this image's torch {torch.__version__} is a CPU build"
    wheel = f"this image's torch {torch.__version__} is built for CUDA {runtime}"
    if driver is None:
        return f"no NVIDIA driver is loaded on this node (libcuda.so.1 not found); {wheel}"
    if driver[0] < int(runtime.split(".")[0]):
        return (
            f"this node's NVIDIA driver runs CUDA up to {driver[0]}.{driver[1]}; {wheel}: "
            "the pool's gpuDriverVersion must install a newer driver (components/facts/gpu_software.py)"
        )
    if not gpus_seen:
        return f"the driver runs CUDA {driver[0]}.{driver[1]} but torch sees no GPU; {wheel}"
    return None


def main() -> None:
    """Exit with DRIVER_EXIT_CODE, saying why, when this node cannot run the image's CUDA; either way, name the
    node's driver, so a stack can state it."""
    driver = driver_cuda_version()
    print(f"trainyard: NVIDIA driver {driver_version() or 'unknown'} on this node", flush=True)
    problem = cuda_problem(driver, torch.version.cuda, torch.cuda.is_available())
    if problem is not None:
        print(f"trainyard: {problem}", file=sys.stderr, flush=True)
        sys.exit(DRIVER_EXIT_CODE)
    print(f"trainyard: the driver runs CUDA {driver[0]}.{driver[1]}; torch is built for CUDA {torch.version.cuda}")


if __name__ == "__main__":
    main()
