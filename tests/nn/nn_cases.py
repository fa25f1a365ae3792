"""Layer cases shared by the nn tests: small graphs, layer builders, and dense float64 references.

A :class:`Case` builds a layer (float32, seeded) and its inputs, and knows the
dense float64 formula the layer implements. The generic tests in
``test_layers.py`` run every case in float64 against the formula, in
fp32/bf16/fp16 and under autocast against the float64 run, and through the
module protocol (state_dict, pickling, reset_parameters, frames untouched).

References read the layer's parameters (``p(...)`` = detached float64 copy)
but compute everything else from the adjacency / edge lists, never through
mpgraph.
"""

import dataclasses
import math
from typing import Callable

import torch
import torch.nn.functional as F

import mpgraph as dgl
import mpgraph.nn as mnn


# ----------------------------------------------------------------------------- graphs

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def homo_graph():
    """7 nodes, 18 random edges (a multi-edge included) plus a self-loop on every node."""
    gen = _gen(3)
    src = torch.randint(0, 7, (17,), generator=gen).tolist() + [0]
    dst = torch.randint(0, 7, (17,), generator=gen).tolist() + [1]
    src, dst = src + [0] + list(range(7)), dst + [1] + list(range(7))
    return dgl.graph((src, dst), num_nodes=7)


def bipartite_graph():
    """5 source and 4 destination nodes; every destination has an in-edge."""
    return dgl.heterograph({("_U", "_E", "_V"): ([0, 1, 2, 3, 4, 0, 2, 1, 4], [0, 0, 1, 2, 3, 3, 2, 1, 1])},
                           num_nodes_dict={"_U": 5, "_V": 4})


def block_graph():
    """A block: 6 source nodes, the first 3 of them are the destinations."""
    return dgl.create_block(([0, 1, 2, 3, 4, 5, 0, 1, 2, 5], [0, 0, 1, 1, 2, 2, 0, 1, 2, 0]),
                            num_src_nodes=6, num_dst_nodes=3)


def batched_graph():
    """Two graphs in one (3 and 4 nodes) with the batch layout set by hand."""
    src = [0, 1, 2, 0, 3, 4, 5, 6, 3, 5]
    dst = [1, 2, 0, 0, 4, 5, 6, 3, 5, 3]
    g = dgl.graph((src, dst), num_nodes=7)
    g.set_batch_num_nodes(torch.tensor([3, 4]))
    g.set_batch_num_edges(torch.tensor([4, 6]))
    return g


def feat(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=_gen(100 + seed)) * scale


def pos_weight(E, seed=0):
    return torch.rand(E, generator=_gen(200 + seed)) + 0.5


# ----------------------------------------------------------------------------- dense helpers

def p(t):
    """Detached float64 copy of a parameter/tensor."""
    return t.detach().double()


def edges(g):
    src, dst = g.edges()
    return src.long(), dst.long()


def adj(g, w=None):
    """Dense ``(N_dst, N_src)`` float64 adjacency; entry = (weighted) number of edges src -> dst."""
    src, dst = edges(g)
    A = torch.zeros(g.num_dst_nodes(), g.num_src_nodes(), dtype=torch.float64)
    vals = torch.ones(src.numel(), dtype=torch.float64) if w is None else w.double().reshape(-1)
    return A.index_put((dst, src), vals, accumulate=True)


def in_deg(g):
    return adj(g).sum(1).clamp(min=1)


def out_deg(g):
    return adj(g).sum(0).clamp(min=1)


def dst_part(g, x):
    return x[: g.num_dst_nodes()] if g.is_block else x


def segments(g):
    return g.batch_num_nodes().tolist()


def edge_softmax_ref(g, e):
    """Per-destination softmax of ``e: (E, ...)`` computed edge group by edge group."""
    src, dst = edges(g)
    out = torch.zeros_like(e)
    for v in range(g.num_dst_nodes()):
        idx = (dst == v).nonzero().squeeze(1)
        if idx.numel():
            out[idx] = torch.softmax(e[idx], dim=0)
    return out


def gru_ref(cell, x, h):
    """GRUCell in float64 from the cell's parameters."""
    W_ih, W_hh, b_ih, b_hh = p(cell.weight_ih), p(cell.weight_hh), p(cell.bias_ih), p(cell.bias_hh)
    gi, gh = x @ W_ih.T + b_ih, h @ W_hh.T + b_hh
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def lstm_ref(lstm, seq, layers=1, batch_first=True):
    """Final hidden state (last layer) of a unidirectional LSTM on ``seq``, from its parameters, float64."""
    x = seq if batch_first else seq.transpose(0, 1)                 # (B, L, D)
    B = x.shape[0]
    for layer in range(layers):
        W_ih, W_hh = p(getattr(lstm, f"weight_ih_l{layer}")), p(getattr(lstm, f"weight_hh_l{layer}"))
        b = p(getattr(lstm, f"bias_ih_l{layer}")) + p(getattr(lstm, f"bias_hh_l{layer}"))
        H = W_hh.shape[1]
        h = torch.zeros(B, H, dtype=torch.float64)
        c = torch.zeros(B, H, dtype=torch.float64)
        outs = []
        for t in range(x.shape[1]):
            gates = x[:, t] @ W_ih.T + h @ W_hh.T + b
            i, f, g_, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g_)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        x = torch.stack(outs, 1)
    return h, x


def linear(mod, x):
    y = x @ p(mod.weight).T
    return y + p(mod.bias) if mod.bias is not None else y


# ----------------------------------------------------------------------------- references

def ref_graphconv(mod, g, x, edge_weight=None):
    xs, xd = (x if isinstance(x, tuple) else (x, dst_part(g, x)))
    A = adj(g, edge_weight)
    A_struct = adj(g)
    din, dout = A_struct.sum(1).clamp(min=1), A_struct.sum(0).clamp(min=1)
    norm = mod._norm
    if norm == "both":
        A = din.pow(-0.5)[:, None] * A * dout.pow(-0.5)[None, :]
    elif norm == "right":
        A = A / din[:, None]
    elif norm == "left":
        A = A / dout[None, :]
    out = A @ xs
    if mod.weight is not None:
        out = out @ p(mod.weight)
    if mod.bias is not None:
        out = out + p(mod.bias)
    return mod._activation(out) if mod._activation is not None else out


def ref_edge_weight_norm(mod, g, w):
    w = w.double()
    src, dst = edges(g)
    out_w = torch.zeros(g.num_src_nodes(), dtype=torch.float64).index_add(0, src, w) + mod._eps
    in_w = torch.zeros(g.num_dst_nodes(), dtype=torch.float64).index_add(0, dst, w) + mod._eps
    if mod._norm == "both":
        return w / (out_w[src].sqrt() * in_w[dst].sqrt())
    if mod._norm == "right":
        return w / in_w[dst]
    if mod._norm == "left":
        return w / out_w[src]
    return w


def _gat_project(mod, g, x):
    H, D = mod._num_heads, mod._out_feats
    if isinstance(x, tuple):
        xs, xd = x
        if mod._separate_fc:
            ws, wd = p(mod.fc_src.weight), p(mod.fc_dst.weight)
        else:
            ws = wd = p(mod.fc.weight)
        return xs, xd, (xs @ ws.T).view(-1, H, D), (xd @ wd.T).view(-1, H, D)
    fs = (x @ p(mod.fc.weight).T).view(-1, H, D)
    return x, dst_part(g, x), fs, dst_part(g, fs)


def ref_gatconv(mod, g, x, edge_weight=None, msg_scale=None):
    """GATConv in float64; ``msg_scale`` (N_src, H, D) multiplies the summed features (a dropout mask)."""
    H, D = mod._num_heads, mod._out_feats
    xs, xd, fs, fd = _gat_project(mod, g, x)
    src, dst = edges(g)
    el = (fs * p(mod.attn_l)).sum(-1)                                  # (N_src, H)
    er = (fd * p(mod.attn_r)).sum(-1)
    e = F.leaky_relu(el[src] + er[dst], mod.leaky_relu.negative_slope)  # (E, H)
    a = edge_softmax_ref(g, e)
    if edge_weight is not None:
        a = a * edge_weight.double()[:, None]
    msg = fs if msg_scale is None else fs * msg_scale.double()
    out = torch.zeros(g.num_dst_nodes(), H, D, dtype=torch.float64).index_add(0, dst, a[:, :, None] * msg[src])
    if mod.res_fc is not None:
        res = linear(mod.res_fc, xd) if isinstance(mod.res_fc, torch.nn.Linear) else xd
        out = out + res.view(xd.shape[0], -1, D)
    if mod.has_explicit_bias:
        out = out + p(mod.bias).view(H, D)
    return mod.activation(out) if mod.activation is not None else out


def ref_gatv2conv(mod, g, x):
    H, D = mod._num_heads, mod._out_feats
    if isinstance(x, tuple):
        xs, xd = x
        fs, fd = linear(mod.fc_src, xs).view(-1, H, D), linear(mod.fc_dst, xd).view(-1, H, D)
    else:
        xs, xd = x, dst_part(g, x)
        fs = linear(mod.fc_src, xs).view(-1, H, D)
        fd = dst_part(g, fs if mod.share_weights else linear(mod.fc_dst, xs).view(-1, H, D))
    src, dst = edges(g)
    z = F.leaky_relu(fs[src] + fd[dst], mod.leaky_relu.negative_slope)    # (E, H, D)
    e = (z * p(mod.attn)).sum(-1)
    a = edge_softmax_ref(g, e)
    out = torch.zeros(g.num_dst_nodes(), H, D, dtype=torch.float64).index_add(0, dst, a[:, :, None] * fs[src])
    if mod.res_fc is not None:
        res = linear(mod.res_fc, xd) if isinstance(mod.res_fc, torch.nn.Linear) else xd
        out = out + res.view(xd.shape[0], -1, D)
    return mod.activation(out) if mod.activation is not None else out


def ref_dotgatconv(mod, g, x):
    H, D = mod._num_heads, mod._out_feats
    xs, xd, fs, fd = _gat_project(mod, g, x)
    src, dst = edges(g)
    e = (fs[src] * fd[dst]).sum(-1) / math.sqrt(D)
    a = edge_softmax_ref(g, e)
    return torch.zeros(g.num_dst_nodes(), H, D, dtype=torch.float64).index_add(0, dst, a[:, :, None] * fs[src])


def ref_sageconv(mod, g, x, edge_weight=None):
    xs, xd = (x if isinstance(x, tuple) else (x, dst_part(g, x)))
    src, dst = edges(g)
    w = torch.ones(src.numel(), dtype=torch.float64) if edge_weight is None else edge_weight.double()
    Nd = g.num_dst_nodes()
    agg = mod._aggre_type
    if agg in ("mean", "gcn"):
        A = adj(g, w)
        deg = adj(g).sum(1)
        if agg == "mean":
            neigh = (A @ xs) / deg.clamp(min=1)[:, None]
        else:
            neigh = (A @ xs + xd) / (deg + 1)[:, None]
    elif agg == "pool":
        hp = torch.relu(linear(mod.fc_pool, xs))
        neigh = torch.zeros(Nd, xs.shape[1], dtype=torch.float64)
        for v in range(Nd):
            idx = (dst == v).nonzero().squeeze(1)
            if idx.numel():
                neigh[v] = (hp[src[idx]] * w[idx, None]).max(0).values
    else:
        neigh = torch.zeros(Nd, xs.shape[1], dtype=torch.float64)
        for v in range(Nd):
            idx = (dst == v).nonzero().squeeze(1)                   # edge-ID order
            if idx.numel():
                seq = (xs[src[idx]] * w[idx, None]).unsqueeze(0)
                neigh[v] = lstm_ref(mod.lstm, seq)[0][0]
    out = neigh @ p(mod.fc_neigh.weight).T
    if agg == "gcn":
        if mod.bias is not None:
            out = out + p(mod.bias)
    else:
        out = out + linear(mod.fc_self, xd)
    if mod.activation is not None:
        out = mod.activation(out)
    return out


def _reduce_ref(g, msg, reducer, width):
    """Reduce per-edge messages ``(E, D)`` at destinations with sum/max/mean (empty -> 0)."""
    src, dst = edges(g)
    out = torch.zeros(g.num_dst_nodes(), width, dtype=torch.float64)
    for v in range(g.num_dst_nodes()):
        idx = (dst == v).nonzero().squeeze(1)
        if idx.numel():
            m = msg[idx]
            out[v] = {"sum": m.sum(0), "max": m.max(0).values, "mean": m.mean(0)}[reducer]
    return out


def ref_ginconv(mod, g, x, edge_weight=None):
    xs, xd = (x if isinstance(x, tuple) else (x, dst_part(g, x)))
    src, _ = edges(g)
    msg = xs[src] if edge_weight is None else xs[src] * edge_weight.double()[:, None]
    out = (1 + p(mod.eps)) * xd + _reduce_ref(g, msg, mod._aggregator_type, xs.shape[1])
    if mod.apply_func is not None:
        out = linear(mod.apply_func, out)
    return mod.activation(out) if mod.activation is not None else out


def ref_gineconv(mod, g, x, ef):
    xs, xd = (x if isinstance(x, tuple) else (x, dst_part(g, x)))
    src, _ = edges(g)
    out = (1 + p(mod.eps)) * xd + _reduce_ref(g, torch.relu(xs[src] + ef), "sum", xs.shape[1])
    return linear(mod.apply_func, out) if mod.apply_func is not None else out


def _sym_adj(g, edge_weight, src_deg="in"):
    """``D^-1/2 A D^-1/2`` (in-degrees both sides, DGL's SGC/TAG/GCNII/Cheb) or the EdgeWeightNorm'ed weights."""
    if edge_weight is not None:
        return adj(g, ref_edge_weight_norm(mnn.EdgeWeightNorm("both"), g, edge_weight))
    A = adj(g)
    din = A.sum(1).clamp(min=1)
    ds = din if src_deg == "in" else A.sum(0).clamp(min=1)
    return din.pow(-0.5)[:, None] * A * ds.pow(-0.5)[None, :]


def ref_sgconv(mod, g, x, edge_weight=None):
    S = _sym_adj(g, edge_weight)
    for _ in range(mod._k):
        x = S @ x
    return linear(mod.fc, x)


def ref_appnpconv(mod, g, x, edge_weight=None):
    S = _sym_adj(g, edge_weight, src_deg="out")
    h = x
    for _ in range(mod._k):
        h = (1 - mod._alpha) * (S @ h) + mod._alpha * x
    return h


def ref_tagconv(mod, g, x, edge_weight=None):
    S = _sym_adj(g, edge_weight)
    hs = [x]
    for _ in range(mod._k):
        hs.append(S @ hs[-1])
    out = linear(mod.lin, torch.cat(hs, 1))
    return mod._activation(out) if mod._activation is not None else out


def ref_chebconv(mod, g, x, lambda_max):
    S = _sym_adj(g, None)
    N = x.shape[0]
    lam = torch.repeat_interleave(torch.as_tensor(lambda_max, dtype=torch.float64), g.batch_num_nodes())
    L = torch.eye(N, dtype=torch.float64) - S
    L_t = (2 / lam)[:, None] * L - torch.eye(N, dtype=torch.float64)
    Z = [x]
    if mod._k > 1:
        Z.append(L_t @ x)
    for _ in range(2, mod._k):
        Z.append(2 * L_t @ Z[-1] - Z[-2])
    out = linear(mod.linear, torch.cat(Z, 1))
    return mod.activation(out) if mod.activation is not None else out


def ref_gcn2conv(mod, g, x, x0, edge_weight=None):
    S = _sym_adj(g, edge_weight)
    P = (1 - mod.alpha) * (S @ x)
    Q = mod.alpha * x0
    if mod._project_initial_features:
        out = (1 - mod.beta) * (P + Q) + mod.beta * ((P + Q) @ p(mod.weight1))
    else:
        out = (1 - mod.beta) * (P + Q) + mod.beta * (P @ p(mod.weight1) + Q @ p(mod.weight2))
    if mod.bias is not None:
        out = out + p(mod.bias)
    return mod._activation(out) if mod._activation is not None else out


def ref_gatedgraphconv(mod, g, x, etypes):
    src, dst = edges(g)
    N, D = x.shape[0], mod._out_feats
    h = torch.cat([x, torch.zeros(N, D - x.shape[1], dtype=torch.float64)], 1)
    for _ in range(mod._n_steps):
        a = torch.zeros(N, D, dtype=torch.float64)
        for t, lin in enumerate(mod.linears):
            mask = etypes == t
            A_t = torch.zeros(N, N, dtype=torch.float64).index_put((dst[mask], src[mask]),
                                                                  torch.ones(int(mask.sum()), dtype=torch.float64),
                                                                  accumulate=True)
            a = a + A_t @ linear(lin, h)
        h = gru_ref(mod.gru, a, h)
    return h


def ref_edgeconv(mod, g, x):
    xs, xd = (x if isinstance(x, tuple) else (x, dst_part(g, x)))
    src, dst = edges(g)
    e = linear(mod.theta, xd[dst] - xs[src]) + linear(mod.phi, xd)[dst]
    return _reduce_ref(g, e, "max", e.shape[1])


def typed_weight_ref(lin):
    if lin.regularizer == "basis":
        return torch.einsum("tb,bio->tio", p(lin.coeff), p(lin.W))
    if lin.regularizer == "bdd":
        W = p(lin.W).view(lin.num_types, lin.num_bases, lin.submat_in, lin.submat_out)
        return torch.stack([torch.block_diag(*W[t]) for t in range(lin.num_types)])
    return p(lin.W)


def ref_typedlinear(mod, x, x_type, sorted_by_type=False):
    W = typed_weight_ref(mod)
    return torch.stack([x[i] @ W[int(x_type[i])] for i in range(x.shape[0])])


def ref_relgraphconv(mod, g, x, etypes, norm=None):
    src, dst = edges(g)
    W = typed_weight_ref(mod.linear_r)
    msg = torch.stack([x[src[k]] @ W[int(etypes[k])] for k in range(src.numel())])
    if norm is not None:
        msg = msg * norm.double()
    h = torch.zeros(g.num_dst_nodes(), mod._out_feat, dtype=torch.float64).index_add(0, dst, msg)
    if mod.layer_norm:
        h = F.layer_norm(h, (mod._out_feat,), p(mod.layer_norm_weight.weight), p(mod.layer_norm_weight.bias),
                         mod.layer_norm_weight.eps)
    if mod.bias:
        h = h + p(mod.h_bias)
    if mod.self_loop:
        h = h + x[: g.num_dst_nodes()] @ p(mod.loop_weight)
    return mod.activation(h) if mod.activation is not None else h


def ref_densegraphconv(mod, A, x):
    A = A.double()
    din, dsrc = A.sum(1).clamp(min=1), A.sum(0).clamp(min=1)
    if mod._norm == "both":
        A = din.pow(-0.5)[:, None] * A * dsrc.pow(-0.5)[None, :]
    elif mod._norm == "right":
        A = A / din[:, None]
    out = A @ x @ p(mod.weight)
    return out + p(mod.bias) if mod.bias is not None else out


def ref_densesageconv(mod, A, x):
    A = A.double()
    h = (A @ x + x[: A.shape[0]]) / (A.sum(1) + 1)[:, None]
    return linear(mod.fc, h)


def ref_densechebconv(mod, A, x):
    A = A.double()
    N = A.shape[0]
    d = A.sum(1).clamp(min=1).pow(-0.5)
    L = torch.eye(N, dtype=torch.float64) - d[:, None] * A * d[None, :]
    lam = float(torch.linalg.eigvals(L).real.max())
    L_t = 2 * L / lam - torch.eye(N, dtype=torch.float64)
    Z = [torch.eye(N, dtype=torch.float64), L_t]
    for _ in range(2, mod._k):
        Z.append(2 * L_t @ Z[-1] - Z[-2])
    out = sum(Z[k] @ x @ p(mod.W[k]) for k in range(mod._k))
    return out + p(mod.bias) if mod.bias is not None else out


def _split(g, x):
    return torch.split(x, segments(g))


def ref_pool(kind):
    def ref(mod, g, x):
        parts = _split(g, x)
        if kind == "sum":
            return torch.stack([s.sum(0) for s in parts])
        if kind == "mean":
            return torch.stack([s.mean(0) for s in parts])
        return torch.stack([s.max(0).values for s in parts])
    return ref


def ref_sortpooling(mod, g, x):
    outs = []
    for s in _split(g, x):
        s = s.sort(-1).values
        order = torch.argsort(s[:, -1], descending=True, stable=True)[: mod.k]
        top = s[order]
        if top.shape[0] < mod.k:
            top = torch.cat([top, torch.zeros(mod.k - top.shape[0], s.shape[1], dtype=s.dtype)])
        outs.append(top.reshape(-1))
    return torch.stack(outs)


def ref_globalattention(mod, g, x):
    gate = linear(mod.gate_nn, x)
    f = linear(mod.feat_nn, x) if mod.feat_nn is not None else x
    return torch.stack([(torch.softmax(gs, 0) * fs).sum(0) for gs, fs in zip(_split(g, gate), _split(g, f))])


def ref_set2set(mod, g, x):
    B, D = len(segments(g)), mod.input_dim
    L = mod.n_layers
    h = [torch.zeros(B, D, dtype=torch.float64) for _ in range(L)]
    c = [torch.zeros(B, D, dtype=torch.float64) for _ in range(L)]
    q_star = torch.zeros(B, 2 * D, dtype=torch.float64)
    for _ in range(mod.n_iters):
        inp = q_star
        for layer in range(L):
            W_ih, W_hh = p(getattr(mod.lstm, f"weight_ih_l{layer}")), p(getattr(mod.lstm, f"weight_hh_l{layer}"))
            b = p(getattr(mod.lstm, f"bias_ih_l{layer}")) + p(getattr(mod.lstm, f"bias_hh_l{layer}"))
            i, f_, g_, o = (inp @ W_ih.T + h[layer] @ W_hh.T + b).chunk(4, 1)
            c[layer] = torch.sigmoid(f_) * c[layer] + torch.sigmoid(i) * torch.tanh(g_)
            h[layer] = torch.sigmoid(o) * torch.tanh(c[layer])
            inp = h[layer]
        q = inp
        reads = []
        for b_, xs in enumerate(_split(g, x)):
            alpha = torch.softmax(xs @ q[b_], 0)
            reads.append((alpha[:, None] * xs).sum(0))
        q_star = torch.cat([q, torch.stack(reads)], 1)
    return q_star


def ref_weightandsum(mod, g, x):
    w = torch.sigmoid(linear(mod.atom_weighting[0], x))
    return torch.stack([s.sum(0) for s in _split(g, x * w)])


def ref_jk(mod, xs):
    if mod.mode == "cat":
        return torch.cat(xs, 1)
    return torch.stack(xs, 0).max(0).values


# ----------------------------------------------------------------------------- cases

@dataclasses.dataclass
class Case:
    """One layer configuration: ``build()`` -> module; ``inputs()`` -> (graph or None, args, kwargs)."""

    name: str
    build: Callable
    inputs: Callable
    ref: Callable
    #: output dtype under CPU bf16 autocast: "amp" (bfloat16) or "input" (the input's dtype)
    autocast_out: str = "amp"
    #: the layer has parameters (reset_parameters must change them)
    has_params: bool = True
    #: the layer defines reset_parameters (DGL's GlobalAttentionPooling does not: its networks are the user's)
    resettable: bool = True
    #: gradients go through a multi-step recurrent cell (tolerances.RECURRENT_GRAD_TOL)
    recurrent_grad: bool = False

    def call(self, mod, graph, args, kwargs):
        out = mod(*args, **kwargs) if graph is None else mod(graph, *args, **kwargs)
        return out[0] if isinstance(out, tuple) else out

    def reference(self, mod, graph, args, kwargs):
        return self.ref(mod, *args, **kwargs) if graph is None else self.ref(mod, graph, *args, **kwargs)


def _seeded(fn):
    def build():
        torch.manual_seed(0)
        return fn()
    return build


def _case(name, build, inputs, ref, **kw):
    return Case(name, _seeded(build), inputs, ref, **kw)


def _homo(*widths, extra=None):
    def inputs():
        g = homo_graph()
        args = [feat(g.num_nodes(), w, seed=i) for i, w in enumerate(widths)]
        kwargs = extra(g) if extra is not None else {}
        return g, args, kwargs
    return inputs


def _bip(ws, wd, extra=None):
    def inputs():
        g = bipartite_graph()
        x = (feat(g.num_src_nodes(), ws, seed=1), feat(g.num_dst_nodes(), wd, seed=2))
        return g, [x], (extra(g) if extra is not None else {})
    return inputs


def _block(w, extra=None):
    def inputs():
        g = block_graph()
        return g, [feat(g.num_src_nodes(), w, seed=3)], (extra(g) if extra is not None else {})
    return inputs


def _ew(g):
    return {"edge_weight": pos_weight(g.num_edges())}


def _batched(w):
    def inputs():
        g = batched_graph()
        return g, [feat(g.num_nodes(), w, seed=4)], {}
    return inputs


def _dense(w, square=True):
    def inputs():
        gen = _gen(7)
        A = (torch.rand(5, 5 if square else 6, generator=gen) < 0.5).float()
        A.fill_diagonal_(1.0)
        return None, [A, feat(A.shape[1], w, seed=5)], {}
    return inputs


def _etypes(T):
    def inputs():
        g = homo_graph()
        return g, [feat(g.num_nodes(), 6, seed=6), torch.arange(g.num_edges()) % T], {}
    return inputs


def _relgraph(T, norm=False):
    def inputs():
        g = homo_graph()
        kw = {"norm": torch.rand(g.num_edges(), 1, generator=_gen(8)) + 0.5} if norm else {}
        return g, [feat(g.num_nodes(), 6, seed=6), (torch.arange(g.num_edges()) * 7) % T], kw
    return inputs


def _typed():
    return None, [feat(9, 4, seed=9), torch.tensor([2, 0, 1, 1, 0, 2, 2, 1, 0])], {}


def _jk(mode):
    def inputs():
        return None, [[feat(5, 4, seed=10), feat(5, 4, seed=11), feat(5, 4, seed=12)]], {}
    return inputs


def _gine():
    g = homo_graph()
    return g, [feat(g.num_nodes(), 4, seed=1), feat(g.num_edges(), 4, seed=2)], {}


def _gcn2(ew=False):
    def inputs():
        g = homo_graph()
        x = feat(g.num_nodes(), 5, seed=1, scale=0.5)
        return g, [x, feat(g.num_nodes(), 5, seed=2, scale=0.5)], (_ew(g) if ew else {})
    return inputs


def _cheb():
    g = batched_graph()
    return g, [feat(g.num_nodes(), 4, seed=1)], {"lambda_max": [1.7, 1.9]}


def _ewnorm(norm):
    def inputs():
        g = bipartite_graph()
        return g, [pos_weight(g.num_edges())], {}
    return inputs


CASES = [
    _case("GraphConv", lambda: mnn.GraphConv(4, 6), _homo(4), ref_graphconv),
    _case("GraphConv-shrink-relu", lambda: mnn.GraphConv(6, 3, activation=torch.relu), _homo(6), ref_graphconv),
    _case("GraphConv-right-ew", lambda: mnn.GraphConv(4, 3, norm="right"), _homo(4, extra=_ew), ref_graphconv),
    _case("GraphConv-left", lambda: mnn.GraphConv(4, 3, norm="left"), _homo(4), ref_graphconv),
    _case("GraphConv-none-noweight", lambda: mnn.GraphConv(4, 4, norm="none", weight=False, bias=False),
          _homo(4), ref_graphconv, has_params=False),
    _case("GraphConv-bipartite-ew", lambda: mnn.GraphConv(5, 3), _bip(5, 5, _ew), ref_graphconv),
    _case("GraphConv-block", lambda: mnn.GraphConv(4, 3), _block(4), ref_graphconv),
    _case("EdgeWeightNorm-both", lambda: mnn.EdgeWeightNorm("both"), _ewnorm("both"), ref_edge_weight_norm,
          autocast_out="input", has_params=False),
    _case("EdgeWeightNorm-right", lambda: mnn.EdgeWeightNorm("right", eps=0.1), _ewnorm("right"),
          ref_edge_weight_norm, autocast_out="input", has_params=False),
    _case("GATConv", lambda: mnn.GATConv(4, 3, num_heads=2), _homo(4), ref_gatconv),
    _case("GATConv-residual-elu", lambda: mnn.GATConv(4, 3, num_heads=2, residual=True, activation=F.elu),
          _homo(4), ref_gatconv),
    _case("GATConv-identity-residual", lambda: mnn.GATConv(6, 3, num_heads=2, residual=True), _homo(6),
          ref_gatconv),
    _case("GATConv-bipartite", lambda: mnn.GATConv((5, 3), 2, num_heads=2, residual=True), _bip(5, 3),
          ref_gatconv),
    _case("GATConv-block-ew", lambda: mnn.GATConv(4, 3, num_heads=1), _block(4, _ew), ref_gatconv),
    _case("GATv2Conv", lambda: mnn.GATv2Conv(4, 3, num_heads=2, residual=True), _homo(4), ref_gatv2conv),
    _case("GATv2Conv-share", lambda: mnn.GATv2Conv(4, 3, num_heads=2, share_weights=True), _homo(4),
          ref_gatv2conv),
    _case("GATv2Conv-bipartite", lambda: mnn.GATv2Conv((5, 3), 2, num_heads=2), _bip(5, 3), ref_gatv2conv),
    _case("GATv2Conv-block", lambda: mnn.GATv2Conv(4, 3, num_heads=2), _block(4), ref_gatv2conv),
    _case("DotGatConv", lambda: mnn.DotGatConv(4, 3, num_heads=2), _homo(4), ref_dotgatconv),
    _case("DotGatConv-bipartite", lambda: mnn.DotGatConv((5, 3), 2, num_heads=2), _bip(5, 3), ref_dotgatconv),
    _case("SAGEConv-mean", lambda: mnn.SAGEConv(4, 3, "mean"), _homo(4), ref_sageconv),
    _case("SAGEConv-mean-ew", lambda: mnn.SAGEConv(3, 5, "mean"), _homo(3, extra=_ew), ref_sageconv),
    _case("SAGEConv-gcn", lambda: mnn.SAGEConv(4, 3, "gcn"), _homo(4), ref_sageconv),
    _case("SAGEConv-gcn-grow-block", lambda: mnn.SAGEConv(3, 5, "gcn"), _block(3), ref_sageconv),
    _case("SAGEConv-pool-bipartite", lambda: mnn.SAGEConv((5, 3), 4, "pool"), _bip(5, 3), ref_sageconv),
    _case("SAGEConv-lstm", lambda: mnn.SAGEConv(4, 3, "lstm"), _homo(4), ref_sageconv),
    _case("SAGEConv-lstm-ew-block", lambda: mnn.SAGEConv(4, 3, "lstm"), _block(4, _ew), ref_sageconv),
    _case("GINConv-sum", lambda: mnn.GINConv(torch.nn.Linear(4, 3), "sum", init_eps=0.1, learn_eps=True),
          _homo(4), ref_ginconv),
    _case("GINConv-max-ew", lambda: mnn.GINConv(None, "max", init_eps=-0.2), _homo(4, extra=_ew), ref_ginconv,
          has_params=False),
    _case("GINConv-mean-bipartite", lambda: mnn.GINConv(torch.nn.Linear(4, 2), "mean", activation=torch.tanh),
          _bip(4, 4), ref_ginconv, has_params=False),
    _case("GINEConv", lambda: mnn.GINEConv(torch.nn.Linear(4, 3), init_eps=0.3, learn_eps=True), _gine,
          ref_gineconv),
    _case("SGConv", lambda: mnn.SGConv(4, 3, k=2), _homo(4), ref_sgconv),
    _case("SGConv-ew", lambda: mnn.SGConv(4, 3, k=2), _homo(4, extra=_ew), ref_sgconv),
    _case("APPNPConv", lambda: mnn.APPNPConv(k=3, alpha=0.2), _homo(4), ref_appnpconv, has_params=False),
    _case("APPNPConv-ew", lambda: mnn.APPNPConv(k=2, alpha=0.5), _homo(4, extra=_ew), ref_appnpconv,
          has_params=False),
    _case("TAGConv", lambda: mnn.TAGConv(4, 3, k=2), _homo(4), ref_tagconv),
    _case("TAGConv-ew", lambda: mnn.TAGConv(4, 3, k=1, activation=torch.relu), _homo(4, extra=_ew), ref_tagconv),
    _case("ChebConv", lambda: mnn.ChebConv(4, 3, k=3), _cheb, ref_chebconv),
    _case("GCN2Conv", lambda: mnn.GCN2Conv(5, layer=2, alpha=0.2, lambda_=0.5), _gcn2(), ref_gcn2conv),
    _case("GCN2Conv-sep-ew", lambda: mnn.GCN2Conv(5, layer=1, project_initial_features=False, activation=F.relu),
          _gcn2(ew=True), ref_gcn2conv),
    _case("GatedGraphConv", lambda: mnn.GatedGraphConv(6, 8, n_steps=2, n_etypes=3), _etypes(3),
          ref_gatedgraphconv),
    _case("GatedGraphConv-1type", lambda: mnn.GatedGraphConv(6, 6, n_steps=2, n_etypes=1), _etypes(1),
          ref_gatedgraphconv),
    _case("EdgeConv", lambda: mnn.EdgeConv(4, 3), _homo(4), ref_edgeconv),
    _case("EdgeConv-bipartite", lambda: mnn.EdgeConv(4, 3), _bip(4, 4), ref_edgeconv),
    _case("RelGraphConv", lambda: mnn.RelGraphConv(6, 4, num_rels=3), _relgraph(3), ref_relgraphconv),
    _case("RelGraphConv-basis-norm", lambda: mnn.RelGraphConv(6, 4, num_rels=3, regularizer="basis", num_bases=2,
                                                              layer_norm=True, activation=torch.relu),
          _relgraph(3, norm=True), ref_relgraphconv),
    _case("RelGraphConv-bdd", lambda: mnn.RelGraphConv(6, 4, num_rels=4, regularizer="bdd", num_bases=2,
                                                       self_loop=False), _relgraph(4), ref_relgraphconv),
    _case("TypedLinear", lambda: mnn.TypedLinear(4, 6, 3), _typed, ref_typedlinear),
    _case("TypedLinear-basis", lambda: mnn.TypedLinear(4, 6, 3, "basis", 2), _typed, ref_typedlinear),
    _case("TypedLinear-bdd", lambda: mnn.TypedLinear(4, 6, 3, "bdd", 2), _typed, ref_typedlinear),
    _case("DenseGraphConv", lambda: mnn.DenseGraphConv(4, 3), _dense(4), ref_densegraphconv),
    _case("DenseGraphConv-right-rect", lambda: mnn.DenseGraphConv(4, 6, norm="right"), _dense(4, square=False),
          ref_densegraphconv),
    _case("DenseSAGEConv", lambda: mnn.DenseSAGEConv(4, 3), _dense(4), ref_densesageconv),
    _case("DenseChebConv", lambda: mnn.DenseChebConv(4, 3, k=3), _dense(4), ref_densechebconv),
    _case("SumPooling", lambda: mnn.SumPooling(), _batched(4), ref_pool("sum"), has_params=False),
    _case("AvgPooling", lambda: mnn.AvgPooling(), _batched(4), ref_pool("mean"), has_params=False),
    _case("MaxPooling", lambda: mnn.MaxPooling(), _batched(4), ref_pool("max"), has_params=False),
    _case("SortPooling", lambda: mnn.SortPooling(k=4), _batched(3), ref_sortpooling, has_params=False,
          autocast_out="input"),
    _case("GlobalAttentionPooling", lambda: mnn.GlobalAttentionPooling(torch.nn.Linear(4, 1),
                                                                       torch.nn.Linear(4, 3)),
          _batched(4), ref_globalattention, resettable=False),
    _case("Set2Set", lambda: mnn.Set2Set(4, n_iters=2, n_layers=2), _batched(4), ref_set2set, recurrent_grad=True),
    _case("WeightAndSum", lambda: mnn.WeightAndSum(4), _batched(4), ref_weightandsum),
    _case("JumpingKnowledge-cat", lambda: mnn.JumpingKnowledge("cat"), _jk("cat"), ref_jk, has_params=False,
          autocast_out="input"),
    _case("JumpingKnowledge-max", lambda: mnn.JumpingKnowledge("max"), _jk("max"), ref_jk, has_params=False,
          autocast_out="input"),
]

CASE_IDS = [c.name for c in CASES]
BY_NAME = {c.name: c for c in CASES}
