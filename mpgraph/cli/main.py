"""``mpgraph`` command: ``train``, ``bench precision``, ``info``."""

import argparse
import sys

__all__ = ["main", "build_parser"]


def build_parser():
    from .bench import add_bench_arguments
    from .train import add_train_arguments
    p = argparse.ArgumentParser(prog="mpgraph", description="Train and benchmark GNNs in mixed precision.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{train,bench,info}")
    t = sub.add_parser("train", help="train a GNN and print a precision report")
    add_train_arguments(t)
    b = sub.add_parser("bench", help="benchmarks (bench precision: the same training in each precision)")
    bsub = b.add_subparsers(dest="bench_command", required=True, metavar="{precision}")
    add_bench_arguments(bsub.add_parser("precision", help="train in each precision in its own process"))
    sub.add_parser("info", help="versions, devices, half-precision support and kernel backends")
    return p


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    from ..base import DGLError
    try:
        if args.command == "train":
            from .train import run
            return run(args)
        if args.command == "bench":
            from .bench import run_precision
            return run_precision(args)
        from .info import run_info
        return run_info()
    except DGLError as err:
        print(f"mpgraph {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
