"""Validation against reference peers (SimGrid's SMPI); never needed at run time."""

from .simgrid import Case, Comparison, compare, netsteer_predictor, platform_xml, run_smpi

__all__ = ["Case", "Comparison", "compare", "netsteer_predictor", "platform_xml", "run_smpi"]
