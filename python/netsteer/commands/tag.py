"""``netsteer tag encode|decode|layout``: UnisonFlow tags for scripts and captures."""

from __future__ import annotations

import json
from typing import Optional

import typer

from ._console import output_console

tag_app = typer.Typer(help="UnisonFlow tags: MPI context in a destination MAC.", no_args_is_help=True)


#: The tag's fields ``encode`` names in its errors, each given by the option of its name.
ENCODE_OPTIONS = ("primitive", "job", "comm", "src", "dst")


def register(app: typer.Typer) -> None:
    app.add_typer(tag_app, name="tag")


@tag_app.command("encode")
def encode_cmd(
    primitive: str = typer.Option(..., "--primitive", "-p", help="MPI primitive: send, bcast, reduce, allreduce..."),
    job: int = typer.Option(..., "--job", "-j", help="Job number (0..63)."),
    comm: int = typer.Option(..., "--comm", "-c", help="Communicator number within the job (0..15)."),
    src: int = typer.Option(..., "--src", "-s", help="Source rank in the communicator."),
    dst: int = typer.Option(..., "--dst", "-d", help="Destination rank in the communicator."),
    size: Optional[int] = typer.Option(None, "--size", help="Communicator size (1..32768): refuse ranks outside it."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Print the tag (a destination MAC) of one message's MPI context."""
    from ..unisonflow.tags import Tag, TagError, check_comm_size, encode, format_mac

    check_comm_size(size, field="--size")
    try:
        tag = Tag(primitive, job, comm, src, dst)
        mac = format_mac(encode(tag, size))
    except TagError as exc:  # the tag's field is the option that gave it: --dst, not dst
        raise exc.as_options() if exc.field in ENCODE_OPTIONS else exc from None
    typer.echo(json.dumps({"mac": mac, **tag.as_dict()}) if as_json else mac)


@tag_app.command("decode")
def decode_cmd(
    mac: str = typer.Argument(..., help="A tag: aa:bb:cc:dd:ee:ff (or with -, or 12 hex digits)."),
    size: Optional[int] = typer.Option(None, "--size", help="Communicator size (1..32768): refuse ranks outside it."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Print the MPI context in a tag: primitive, job, comm, src, dst."""
    from ..unisonflow.tags import TagError, check_comm_size, decode

    check_comm_size(size, field="--size")
    try:
        tag = decode(mac, size)
    except TagError as exc:  # what the MAC holds: "MAC's dst", the argument's part
        raise TagError(exc.reason, field="MAC" if exc.field == "mac" else f"MAC's {exc.field}") from None
    if as_json:
        typer.echo(json.dumps(tag.as_dict()))
        return
    typer.echo(" ".join(f"{k}={v}" for k, v in tag.as_dict().items()))


@tag_app.command("layout")
def layout_cmd(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Print the tag's bit layout and its limits."""
    from rich.table import Table

    from ..unisonflow import tags

    rows = tags.layout_table()
    if as_json:
        typer.echo(json.dumps({"layout": rows, "primitives": tags.PRIMITIVES, "max_jobs": tags.MAX_JOBS,
                               "max_comms": tags.MAX_COMMS, "max_ranks": tags.MAX_RANKS}))
        return
    t = Table(title="UnisonFlow tag (48-bit destination MAC, bit 47 first)")
    for c in ("field", "bits", "width", "range"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["field"], r["bits"], str(r["width"]), r["range"])
    output_console().print(t)
