"""OpenMP's wait policy, set before torch loads its OpenMP runtime (this module imports neither torch nor numba).

mpgraph's CPU kernels run on Numba's thread pool, and torch's ops on torch's OpenMP pool: two sets of
worker threads on the same cores. With OpenMP's default (active) wait policy, a pool's idle threads keep
spinning for a while after each parallel region, so the first Numba kernel after a torch op (and the first
torch op after a Numba kernel) shares its cores with spinning threads. Measured on the 2-core development
machine (twenty-seventh session): the fused ``u_mul_e`` sum backward of 8 GAT heads (bf16, 2M edges) took
23.3 ms right after any torch op against 19.4 ms without one, and 19.9 ms with ``OMP_WAIT_POLICY=PASSIVE``;
a GAT training epoch (``mpgraph bench precision``) took 0.67-0.70x its time in fp32 and 0.60-0.74x in bf16
with the passive policy.

So ``import mpgraph`` sets ``OMP_WAIT_POLICY=PASSIVE`` when the variable is unset. An OpenMP runtime reads it
when it loads: torch's loads with ``import torch``, so the setting reaches torch's pool only when mpgraph is
imported first (as the ``mpgraph`` command does); Numba's runtime loads at the first parallel kernel, so it
always gets it, and so do child processes. A value the user set (``OMP_WAIT_POLICY=ACTIVE`` keeps the
spinning) is left alone. :func:`status` says which case holds; ``mpgraph info`` prints it.
"""

import os
import sys

__all__ = ["ENV", "configure", "describe", "set_default", "status"]

ENV = "OMP_WAIT_POLICY"
_STATE = {"case": None}


def set_default(name, value, state):
    """Set the environment variable ``name`` to ``value`` unless the user set it, once per process (``state``
    keeps the outcome): ``'user'``, or ``'before-torch'``/``'after-torch'`` (whether torch had loaded)."""
    if state["case"] is None:
        if os.environ.get(name, "").strip():
            state["case"] = "user"
        else:
            os.environ[name] = value
            state["case"] = "after-torch" if "torch" in sys.modules else "before-torch"
    return state["case"]


def describe(name, case, before, after):
    """The status line of a default set by :func:`set_default`: the user's value, or ``before``/``after``
    (what mpgraph's value does when it was set before/after torch loaded)."""
    if case == "user":
        return f"{name}={os.environ.get(name)} (set by the user; mpgraph left it alone)"
    return before if case == "before-torch" else after


def configure():
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it; remember whether torch had loaded already."""
    return set_default(ENV, "PASSIVE", _STATE)


def status():
    """One line on the wait policy of torch's and Numba's OpenMP pools in this process."""
    return describe(
        ENV, configure(),
        f"{ENV}=PASSIVE (set by mpgraph before torch loaded: torch's and Numba's threads sleep when idle)",
        f"{ENV}=PASSIVE for Numba's threads only: torch was imported before mpgraph, so its idle OpenMP threads "
        f"spin and slow the next CPU kernel (set {ENV}=PASSIVE in the environment, or import mpgraph first)")


configure()     # on import: ``mpgraph/__init__.py`` imports this module before anything that imports torch
