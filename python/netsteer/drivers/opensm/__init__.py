"""The ``opensm`` driver: netsteer decisions as OpenSM files, tested on ibsim.

- :mod:`.lft_dump`: LFT dumps (``opensm-lfts.dump``, ``-R file -U FILE``, ``ibroute``).
- :mod:`.partitions`: ``partitions.conf``.
- :mod:`.lids`, :mod:`.guids`: which LID and GUID stand for which topology node.
- :mod:`.runner`: ibsim + OpenSM (+ ``ibroute``/``ibnetdiscover``) as a context manager.

See ``docs/opensm.md``.
"""

from .lft_dump import LftTables, read_lft_dump, read_lft_tables, write_lft_dump
from .lids import LidMap, fabric_lids, opensm_lids, read_guid2lid
from .partitions import Partition, read_partitions_conf, write_partitions_conf

__all__ = [
    "LftTables",
    "LidMap",
    "Partition",
    "fabric_lids",
    "opensm_lids",
    "read_guid2lid",
    "read_lft_dump",
    "read_lft_tables",
    "read_partitions_conf",
    "write_lft_dump",
    "write_partitions_conf",
]
