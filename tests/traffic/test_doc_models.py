"""docs/collectives.md's ``MpiJob`` field list is the model's, and says what a scenario file's
MPI job adds (``stream`` was missing)."""

from __future__ import annotations

import re
from pathlib import Path

from netsteer.scenario import JobModel
from netsteer.traffic.mpi import MpiJob

DOC = " ".join((Path(__file__).resolve().parents[2] / "docs" / "collectives.md").read_text().split())


def test_the_mpijob_fields_and_a_file_s_job_are_as_the_page_says():
    said = DOC[DOC.index("Models: `MpiJob` ("):].split("), steps", 1)[0]
    fields, file_part = said.split('`extra="forbid"`', 1)
    assert re.findall(r"`(\w+)`", fields)[1:] == list(MpiJob.model_fields)
    file_keys = {f.alias or name for name, f in JobModel.model_fields.items()} - {"flows", "bulk"}
    mpi_keys = {"class" if k == "traffic_class" else k for k in MpiJob.model_fields}
    assert file_keys - mpi_keys == {"stream"} and "`stream`" in file_part
    assert mpi_keys - file_keys == set()
