"""Topologies: the model, generators with named parameters, and importers.

Importers, metrics and the command line's specs load on first use
(:mod:`netsteer._lazy`): building a fat-tree needs only the model and its generator.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

_LAZY = {
    "CIRCUIT": ".model",
    "HOST": ".model",
    "SWITCH": ".model",
    "Topology": ".model",
    "TopologyBuilder": ".model",
    "pgft": ".pgft",
    "hybrid": ".hybrid",
    "hyperx": ".hyperx",
    "read_ibnetdiscover": ".ibnetdiscover",
    "read_ibsim_net": ".ibsim_net",
    "read_json": ".json_io",
    "to_json": ".json_io",
    "write_ibsim_net": ".ibsim_net",
    "ibsim_args": ".ibsim_net",
    "ascii": ".metrics",
    "bisection_bandwidth": ".metrics",
    "describe": ".metrics",
    "draw": ".metrics",
    "build_topology": ".spec",
    "parse_topo_arg": ".spec",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_package(__name__, _LAZY)

if TYPE_CHECKING:  # what type checkers and editors see
    from .hybrid import hybrid
    from .hyperx import hyperx
    from .ibnetdiscover import read_ibnetdiscover
    from .ibsim_net import ibsim_args, read_ibsim_net, write_ibsim_net
    from .json_io import read_json, to_json
    from .metrics import ascii, bisection_bandwidth, describe, draw
    from .model import CIRCUIT, HOST, SWITCH, Topology, TopologyBuilder
    from .pgft import pgft
    from .spec import build_topology, parse_topo_arg
