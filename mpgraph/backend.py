"""DGL's backend module: mpgraph always runs on PyTorch.

Ported code often checks ``dgl.backend.backend_name``; here it is ``'pytorch'``.
"""

__all__ = ["backend_name"]

#: Name of the tensor framework mpgraph runs on (always ``'pytorch'``).
backend_name = "pytorch"
