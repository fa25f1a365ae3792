"""``mpgraph info``: versions, devices, half-precision support and the kernel backend of each op."""

import contextlib
import platform

import torch

__all__ = ["run_info", "cpu_flags", "collect"]


def cpu_flags():
    """Half-precision related CPU flags from /proc/cpuinfo (empty where unknown)."""
    wanted = ("avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16", "amx_tile", "avx2", "f16c")
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [w for w in wanted if w in flags]
    except OSError:
        pass
    return []


def collect():
    """Everything ``mpgraph info`` prints, as a dict."""
    import mpgraph
    from mpgraph.ops import _dispatch
    from mpgraph.precision import native_half_matmul
    out = {
        "mpgraph": mpgraph.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_half_flags": cpu_flags(),
        # "torch": torch's own 16-bit CPU matmul; "fp32": the layers multiply float32 upcasts (mpgraph.ops.dense)
        "cpu_half_matmul": {name: "torch" if native_half_matmul(dt) else "fp32"
                            for name, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16))},
        "cuda": torch.cuda.is_available(),
    }
    for mod in ("numba", "triton", "numpy", "scipy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as err:  # noqa: BLE001 - report any import failure as the reason
            out[mod] = f"not available ({type(err).__name__}: {err})"
    if torch.cuda.is_available():
        cap = torch.cuda.get_device_capability()
        out["cuda_device"] = torch.cuda.get_device_name()
        out["cuda_capability"] = f"{cap[0]}.{cap[1]}"
        out["cuda_bf16"] = torch.cuda.is_bf16_supported()
    from .. import _openmp, _thp
    out["openmp_wait"] = _openmp.status()
    out["huge_pages"] = _thp.status()
    out["backends"] = _dispatch.backend_status()
    out["op_backends"] = {}
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            out["op_backends"][f"{device}/{str(dtype).replace('torch.', '')}"] = _probe(device, dtype)
    return out


def _probe(device, dtype):
    """Which backend runs each op for a small graph on ``device`` in ``dtype``."""
    import mpgraph
    from mpgraph.ops import _dispatch
    g = mpgraph.graph(([0, 1, 2], [1, 2, 0]), device=device)
    x = torch.ones(3, 4, dtype=dtype, device=device)
    e = torch.ones(3, 1, dtype=dtype, device=device)
    chosen = {}
    with _autotune_off() if device == "cuda" else contextlib.nullcontext():
        for name, call in _probe_calls(mpgraph, g, x, e):
            with _dispatch.record_backends() as seen:
                call()
            chosen[name] = ",".join(sorted(set(seen))) or "none"
    return chosen


def _probe_calls(mpgraph, g, x, e):
    return (("copy_u_sum", lambda: mpgraph.ops.copy_u_sum(g, x)),
            ("u_mul_e_sum", lambda: mpgraph.ops.u_mul_e_sum(g, x, e)),
            ("copy_u_max", lambda: mpgraph.ops.copy_u_max(g, x)),
            ("u_dot_v", lambda: mpgraph.ops.u_dot_v(g, x, x)),
            ("edge_softmax", lambda: mpgraph.ops.edge_softmax(g, e)))


@contextlib.contextmanager
def _autotune_off():
    """Triton kernels launched with one configuration each: the probe only asks which backend runs, and
    autotuning would compile and time every configuration of every probed kernel."""
    from mpgraph.ops import _triton
    if not _triton.KERNELS:             # triton is not installed: nothing to tune
        yield
        return
    from mpgraph.ops._triton import _common
    with _common.autotune_off():
        yield


def run_info():
    info = collect()
    width = 18
    for key, value in info.items():
        if key in ("backends", "op_backends"):
            continue
        print(f"{key:<{width}} {value}")
    print("kernel backends:")
    for name, status in info["backends"].items():
        print(f"  {name:<{width - 2}} {status}")
    print("backend per op:")
    for where, ops in info["op_backends"].items():
        print(f"  {where:<{width - 2}} " + "  ".join(f"{k}={v}" for k, v in ops.items()))
    return 0
