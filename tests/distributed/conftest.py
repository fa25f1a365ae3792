"""Launching 2-process jobs on 127.0.0.1 for the distributed tests, every wait bounded."""

import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKER = pathlib.Path(__file__).with_name("_worker.py")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(extra=None):
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
               PYTHONUNBUFFERED="1", MPGRAPH_TEST="1")
    env.pop("MPGRAPH_DIST_FAULT", None)
    env.update(extra or {})
    return env


class Job:
    """Processes started together; ``wait`` returns ``[(returncode, stdout, stderr)]`` or fails the test."""

    def __init__(self, procs, logs, started):
        self.procs, self.logs, self.started = procs, logs, started

    def wait(self, timeout):
        """Wait for every process (polling); ``self.ended[i]`` is when process ``i`` was seen to exit."""
        deadline = self.started + timeout
        self.ended = [None] * len(self.procs)
        while None in self.ended:
            for i, p in enumerate(self.procs):
                if self.ended[i] is None and p.poll() is not None:
                    self.ended[i] = time.monotonic()
            if None not in self.ended:
                break
            if time.monotonic() > deadline:
                for q in self.procs:
                    q.kill()
                for q in self.procs:
                    q.wait(10)
                pytest.fail(f"job did not finish within {timeout} s:\n{self.outputs()}")
            time.sleep(0.05)
        return [(p.returncode,) + out for p, out in zip(self.procs, self._read())]

    def _read(self):
        out = []
        for o, e in self.logs:
            out.append((pathlib.Path(o).read_text(), pathlib.Path(e).read_text()))
        return out

    def outputs(self):
        return "\n".join(f"--- process {i} (rc {p.returncode})\n{o}\n{e}"
                         for i, (p, (o, e)) in enumerate(zip(self.procs, self._read())))


def start_ranks(args, tmp_path, world=2, env=None, tag="job"):
    """Start ``python *args`` once per rank with the env:// variables of a ``world``-process job."""
    port = free_port()
    procs, logs = [], []
    started = time.monotonic()
    for r in range(world):
        extra = dict(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(world),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        extra.update(env or {})
        o, e = tmp_path / f"{tag}.{r}.out", tmp_path / f"{tag}.{r}.err"
        procs.append(subprocess.Popen([sys.executable] + [str(a) for a in args], cwd=ROOT, env=_env(extra),
                                      stdout=open(o, "w"), stderr=open(e, "w")))
        logs.append((o, e))
    return Job(procs, logs, started)


def start_torchrun(args, tmp_path, nproc=2, env=None, tag="torchrun"):
    """``python -m torch.distributed.run --nnodes=1 --nproc_per_node=N --master-addr=127.0.0.1 ... *args``."""
    port = free_port()
    o, e = tmp_path / f"{tag}.out", tmp_path / f"{tag}.err"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={nproc}",
           "--master-addr=127.0.0.1", f"--master-port={port}", "--max-restarts=0"] + [str(a) for a in args]
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(env), stdout=open(o, "w"), stderr=open(e, "w"))
    return Job([p], [(o, e)], time.monotonic())


@pytest.fixture(scope="session")
def launch():
    """The launch helpers: ``launch.ranks(args, tmp_path)``, ``launch.torchrun(args, tmp_path)``, ``launch.WORKER``."""
    class _L:
        ranks = staticmethod(start_ranks)
        torchrun = staticmethod(start_torchrun)
    _L.WORKER = WORKER
    return _L
