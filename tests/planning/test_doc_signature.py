"""docs/planning.md gives plan_circuits' signature and the CLI synopsis as the code has them
(it showed the keyword-only parameters as positional, and left out effort, seed and --effort)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from netsteer.cli import app
from netsteer.control.planning import plan_circuits

DOC = " ".join((Path(__file__).resolve().parents[2] / "docs" / "planning.md").read_text().split())


def test_the_signature_is_the_code_s():
    said = re.search(r"`netsteer\.control\.planning\.plan_circuits(\(.*?\))`", DOC).group(1)
    sig = inspect.signature(plan_circuits).replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in
                    inspect.signature(plan_circuits).parameters.values()],
        return_annotation=inspect.Signature.empty)
    assert said == str(sig)


def test_the_synopsis_names_every_option():
    import click
    import typer

    synopsis = re.search(r"`(netsteer plan circuits [^`]*)`", DOC).group(1)
    command = typer.main.get_command(app)
    plan = command.get_command(click.Context(command), "plan").get_command(click.Context(command), "circuits")
    options = {o for p in plan.params for o in p.opts if o.startswith("--") and o != "--help"}
    assert options == set(re.findall(r"--[a-z-]+", synopsis))
