"""netsteer: an application-aware control plane for reconfigurable HPC interconnects.

The flow-level simulator (``netsteer._core``, written in Rust) is the default back end.
"""

__version__ = "0.1.0"
