"""The Python API's glue: topology and workload builders, :class:`Scenario` with its
YAML round trip, and :class:`Result` with DataFrames and figures.

Users import the top level (``import netsteer as ns``); these modules are where
that surface lives.
"""
