"""Topologies: the model, generators with named parameters, and importers."""

from .model import CIRCUIT, HOST, SWITCH, Topology, TopologyBuilder
from .pgft import pgft
from .hybrid import hybrid
from .hyperx import hyperx
from .ibnetdiscover import read_ibnetdiscover
from .ibsim_net import ibsim_args, read_ibsim_net, write_ibsim_net
from .metrics import ascii, bisection_bandwidth, describe, draw
from .spec import build_topology, parse_topo_arg

__all__ = [
    "CIRCUIT", "HOST", "SWITCH", "Topology", "TopologyBuilder", "pgft",
    "hybrid", "hyperx", "read_ibnetdiscover", "read_ibsim_net", "write_ibsim_net",
    "ibsim_args", "ascii", "bisection_bandwidth", "describe", "draw",
    "build_topology", "parse_topo_arg",
]
