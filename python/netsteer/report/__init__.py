"""Reports: result JSON, tables, port-counter files and plots."""

from .atomic import atomic_write
from .result import result_dict

__all__ = ["atomic_write", "result_dict"]
