"""The guide's two training programs (DGL user guide, chapter 8), run end to end on CPU.

The programs below are the guide's text with the imports changed (``dgl`` ->
``mpgraph``), the device set to CPU, and the two real datasets replaced by
random graphs of the same shape (602 features / 41 classes like Reddit, 3703 /
6 like Citeseer, a few hundred nodes) so that the test needs no download.
The guide's ``from torch.cuda.amp import GradScaler`` becomes the public
``torch.amp.GradScaler('cpu')`` (the CUDA-only name is deprecated and has no
CPU form). Epoch counts are kept small; the loss must decrease. The GCN
program's loop omits ``optimizer.zero_grad()`` (gradients pile up and the loss
oscillates, in float32 too); it runs as printed and once with the call added,
and only the latter must show a decreasing loss.
"""

import pytest
import torch

import mpgraph as dgl


class _RandomNodeDataset:
    """A one-graph dataset with DGL's dataset interface: ``data[0]``, ``num_classes``, ``transform``.

    Labels are random; 80% of the edges join nodes of the same class (the real
    graphs are homophilous too) and features are noisy class means, so there is
    something to learn.
    """

    def __init__(self, num_nodes, num_edges, num_feats, num_classes, transform=None, seed=0):
        gen = torch.Generator().manual_seed(seed)
        label = torch.randint(0, num_classes, (num_nodes,), generator=gen)
        src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
        by_class = torch.argsort(label, stable=True)
        counts = torch.bincount(label, minlength=num_classes)
        starts = torch.cumsum(counts, 0) - counts
        c = label[src]
        pick = (torch.rand(num_edges, generator=gen) * counts[c]).long()
        same = by_class[starts[c] + pick]
        dst = torch.where(torch.rand(num_edges, generator=gen) < 0.8, same,
                          torch.randint(0, num_nodes, (num_edges,), generator=gen))
        g = dgl.graph((src, dst), num_nodes=num_nodes)
        means = torch.randn(num_classes, num_feats, generator=gen)
        g.ndata["feat"] = means[label] + 2.0 * torch.randn(num_nodes, num_feats, generator=gen)
        g.ndata["label"] = label
        g.ndata["train_mask"] = torch.rand(num_nodes, generator=gen) < 0.6
        self._g = transform(g) if transform is not None else g
        self.num_classes = num_classes

    def __getitem__(self, i):
        return self._g

    def __len__(self):
        return 1


def RedditDataset(transform=None):
    """Reddit-shaped stand-in: 602 features, 41 classes, 300 nodes."""
    return _RandomNodeDataset(300, 3000, 602, 41, transform, seed=1)


def CiteseerGraphDataset(transform=None):
    """Citeseer-shaped stand-in: 3703 features, 6 classes, 400 nodes."""
    return _RandomNodeDataset(400, 1200, 3703, 6, transform, seed=2)


def run_gat_program(amp_dtype, heads, epochs):
    """The guide's "End-to-End Mixed Precision Training" program (3-layer GAT on Reddit)."""
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.amp import autocast

    from mpgraph.nn import GATConv
    from mpgraph.transforms import AddSelfLoop

    def forward(device_type, g, feat, label, mask, model, amp_dtype):
        amp_enabled = amp_dtype in (torch.float16, torch.bfloat16)
        with autocast(device_type, enabled=amp_enabled, dtype=amp_dtype):
            logit = model(g, feat)
            loss = F.cross_entropy(logit[mask], label[mask])
            return loss

    scaler = torch.amp.GradScaler("cpu")

    def backward(scaler, loss, optimizer):
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    class GAT(nn.Module):
        def __init__(self, in_feats, n_hidden, n_classes, heads):
            super().__init__()
            self.layers = nn.ModuleList()
            self.layers.append(GATConv(in_feats, n_hidden, heads[0], activation=F.elu))
            self.layers.append(GATConv(n_hidden * heads[0], n_hidden, heads[1], activation=F.elu))
            self.layers.append(GATConv(n_hidden * heads[1], n_classes, heads[2], activation=F.elu))

        def forward(self, g, h):
            for l, layer in enumerate(self.layers):
                h = layer(g, h)
                if l != len(self.layers) - 1:
                    h = h.flatten(1)
                else:
                    h = h.mean(1)
            return h

    # Data loading
    transform = AddSelfLoop()
    data = RedditDataset(transform)
    device_type = "cpu"
    dev = torch.device(device_type)
    g = data[0]
    g = g.int().to(dev)
    train_mask = g.ndata["train_mask"]
    feat = g.ndata["feat"]
    label = g.ndata["label"]
    in_feats = feat.shape[1]
    n_hidden = 256
    n_classes = data.num_classes
    model = GAT(in_feats, n_hidden, n_classes, heads)
    model = model.to(dev)
    model.train()

    # Create optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-4)
    losses = []
    for epoch in range(epochs):  # noqa: B007  (the guide's loop)
        optimizer.zero_grad()
        loss = forward(device_type, g, feat, label, train_mask, model, amp_dtype)
        if amp_dtype == torch.float16:
            # Backprop w/ gradient scaling
            backward(scaler, loss, optimizer)
        else:
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    return g, losses


def run_gcn_bf16_program(epochs, zero_grad):
    """The guide's "BFloat16 CPU example" (2-layer GCN on Citeseer).

    The guide's loop never calls ``optimizer.zero_grad()``, so gradients add up
    over the epochs and the loss oscillates instead of decreasing (in float32
    just as in bfloat16: the omission, not the precision). ``zero_grad=False``
    runs the loop as printed; ``True`` adds the call.
    """
    import torch.nn as nn
    import torch.nn.functional as F

    from mpgraph.nn import GraphConv
    from mpgraph.transforms import AddSelfLoop

    class GCN(nn.Module):
        def __init__(self, in_size, hid_size, out_size):
            super().__init__()
            self.layers = nn.ModuleList()
            # two-layer GCN
            self.layers.append(GraphConv(in_size, hid_size, activation=F.relu))
            self.layers.append(GraphConv(hid_size, out_size))
            self.dropout = nn.Dropout(0.5)

        def forward(self, g, features):
            h = features
            for i, layer in enumerate(self.layers):
                if i != 0:
                    h = self.dropout(h)
                h = layer(g, h)
            return h

    # Data loading
    transform = AddSelfLoop()
    data = CiteseerGraphDataset(transform=transform)
    g = data[0]
    g = g.int()
    train_mask = g.ndata["train_mask"]
    feat = g.ndata["feat"]
    label = g.ndata["label"]
    in_size = feat.shape[1]
    hid_size = 16
    out_size = data.num_classes
    model = GCN(in_size, hid_size, out_size)

    # Convert model and graph to bfloat16
    g = dgl.to_bfloat16(g)
    feat = feat.to(dtype=torch.bfloat16)
    model = model.to(dtype=torch.bfloat16)

    model.train()

    # Create optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    loss_fcn = nn.CrossEntropyLoss()

    losses, dtypes = [], set()
    for epoch in range(epochs):  # noqa: B007  (the guide's loop)
        if zero_grad:
            optimizer.zero_grad()
        logits = model(g, feat)
        loss = loss_fcn(logits[train_mask], label[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        dtypes.add(logits.dtype)
    return g, model, losses, dtypes


def _decreased(losses):
    k = max(1, len(losses) // 5)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    return all(torch.isfinite(torch.tensor(losses))) and last < 0.8 * first


@pytest.mark.parametrize("heads", [[1, 1, 1], [2, 2, 2]], ids=["heads1", "heads2"])
def test_guide_gat_autocast_bfloat16(heads):
    g, losses = run_gat_program(torch.bfloat16, heads, epochs=12)
    assert _decreased(losses), losses
    assert sorted(g.ndata) == ["feat", "label", "train_mask"]      # the layers left the frames alone


def test_guide_gat_autocast_float16_with_gradscaler():
    _, losses = run_gat_program(torch.float16, [1, 1, 1], epochs=12)
    assert _decreased(losses), losses


@pytest.mark.parametrize("zero_grad", [False, True], ids=["as_printed", "with_zero_grad"])
def test_guide_gcn_bfloat16(zero_grad):
    g, model, losses, dtypes = run_gcn_bf16_program(epochs=30, zero_grad=zero_grad)
    assert dtypes == {torch.bfloat16}
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())
    assert g.ndata["feat"].dtype == torch.bfloat16
    assert all(torch.isfinite(torch.tensor(losses)))
    if zero_grad:
        assert _decreased(losses), losses
