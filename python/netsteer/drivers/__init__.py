"""Southbound drivers: they carry a routing or configuration decision out to a
real network and report what was applied. A driver never decides.

- :mod:`netsteer.drivers.opensm`: InfiniBand through OpenSM files (LFT dumps for the
  ``file`` routing engine, ``partitions.conf``), tested on ibsim.

The simulator, the default back end, is :mod:`netsteer.sim`.
"""
