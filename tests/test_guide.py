"""The guide's "Message-Passing with Half Precision" examples, run on CPU in fp16 and bf16.

The guide (DGL's user guide chapter 8, ../shared/reference) runs them on CUDA with
``import dgl``; here only the imports and the device change, as a DGL user would port them.
"""

import doctest
import pathlib
import re

import pytest
import torch

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "shared" / "reference" / "dgl-guide-ch8-mixed-precision.rst"

EXAMPLE = '''
>>> import torch
>>> import mpgraph as dgl
>>> import mpgraph.function as fn
>>> dev = torch.device('cpu')
>>> g = dgl.rand_graph(30, 100).to(dev) # Create a graph on GPU w/ 30 nodes and 100 edges.
>>> g.ndata['h'] = torch.rand(30, 16).to(dev).HALF() # Create fp16 node features.
>>> g.edata['w'] = torch.rand(100, 1).to(dev).HALF() # Create fp16 edge features.
>>> # Use DGL's built-in functions for message passing on fp16 features.
>>> g.update_all(fn.u_mul_e('h', 'w', 'm'), fn.sum('m', 'x'))
>>> g.ndata['x'].dtype
torch.DTYPE
>>> g.apply_edges(fn.u_dot_v('h', 'x', 'hx'))
>>> g.edata['hx'].dtype
torch.DTYPE
>>> # Use UDFs for message passing on fp16 features.
>>> def message(edges):
...     return {'m': edges.src['h'] * edges.data['w']}
...
>>> def reduce(nodes):
...     return {'y': torch.sum(nodes.mailbox['m'], 1)}
...
>>> def dot(edges):
...     return {'hy': (edges.src['h'] * edges.dst['y']).sum(-1, keepdims=True)}
...
>>> g.update_all(message, reduce)
>>> g.ndata['y'].dtype
torch.DTYPE
>>> g.apply_edges(dot)
>>> g.edata['hy'].dtype
torch.DTYPE
'''


@pytest.mark.parametrize("method, dtype", [("half", "float16"), ("bfloat16", "bfloat16")])
def test_guide_half_precision_examples(method, dtype):
    text = EXAMPLE.replace("HALF()", f"{method}()").replace("DTYPE", dtype)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, f"guide_{dtype}", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.failed == 0 and result.attempted > 10


def test_guide_results_match_float64():
    import mpgraph as dgl
    import mpgraph.function as fn
    dgl.seed(0)
    g = dgl.rand_graph(30, 100)
    h = torch.rand(30, 16)
    w = torch.rand(100, 1)
    g.ndata["h"], g.edata["w"] = h.half(), w.half()
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "x"))
    src, dst = g.edges()
    ref = torch.zeros(30, 16, dtype=torch.float64).index_add(0, dst, h.half().double()[src] * w.half().double())
    torch.testing.assert_close(g.ndata["x"].double(), ref, rtol=4e-3, atol=4e-3)


@pytest.mark.skipif(not GUIDE.exists(), reason="guide text not available beside the checkout")
def test_embedded_example_covers_every_guide_statement():
    guide = GUIDE.read_text()
    start = guide.index("Message-Passing with Half Precision")
    end = guide.index("End-to-End Mixed Precision Training")
    statements = [line[4:].strip() for line in guide[start:end].splitlines() if line.startswith(">>> ")]
    ours = EXAMPLE.replace("mpgraph", "dgl").replace("'cpu'", "'cuda'").replace("HALF()", "half()")
    ours = re.sub(r"\s+", " ", ours)
    for stmt in statements:
        assert re.sub(r"\s+", " ", stmt) in ours, stmt
