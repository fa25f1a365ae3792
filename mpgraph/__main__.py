"""``python -m mpgraph`` runs the ``mpgraph`` command (train, bench, info)."""

from .cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
