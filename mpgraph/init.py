"""Feature initializers for rows a frame has not been given values for.

An initializer is called as ``init(shape, dtype, device, id_range)`` and returns
a tensor of ``shape``; ``id_range`` is the slice of row ids being created.
"""

import torch

__all__ = ["zero_initializer"]


def zero_initializer(shape, dtype, device, id_range=None):
    """Return zeros of ``shape`` (the default initializer, as in DGL).

    Examples
    --------
    >>> import torch
    >>> from mpgraph.init import zero_initializer
    >>> zero_initializer((2, 3), torch.float32, torch.device('cpu'), slice(0, 2))
    tensor([[0., 0., 0.],
            [0., 0., 0.]])
    """
    return torch.zeros(shape, dtype=dtype, device=device)
