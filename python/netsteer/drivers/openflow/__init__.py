"""The ``openflow`` driver: intents as flow-mods, group-mods and bundles on
OpenFlow 1.4 switches (Open vSwitch), on the wall clock.

- :mod:`.flows`: the pure translation (wanted tables, their differences);
- :mod:`.switch`: one switch through ``ovs-ofctl`` (bundles, statistics);
- :mod:`.driver`: :class:`OpenFlowDriver`, the driver protocol with parallel
  pushes, rollback and re-synchronisation;
- :mod:`.loop`: :func:`run_wall_loop`, the controller core on the wall clock.
"""

from .driver import OpenFlowDriver
from .loop import run_wall_loop

__all__ = ["OpenFlowDriver", "run_wall_loop"]
