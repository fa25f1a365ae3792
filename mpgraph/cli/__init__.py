"""The ``mpgraph`` command line: ``train``, ``bench precision`` and ``info``.

Nothing in the library imports this package.
"""
