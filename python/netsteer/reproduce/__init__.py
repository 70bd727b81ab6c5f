"""Reproductions of the source documents' evaluations, computed from the model.

Each module has ``run(...) -> dict`` (what ``netsteer reproduce NAME --json``
prints) and ``print_report(report, console)``. Numbers come out of the model;
how they compare with the source documents is discussed in ``docs/``.
"""
