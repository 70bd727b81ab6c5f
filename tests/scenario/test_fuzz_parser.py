"""Property test of the scenario parser: any mutation of a valid scenario either
builds or raises NetsteerError; nothing else escapes."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

from .test_errors import GOOD

values = st.one_of(
    st.integers(-5, 300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["10Gbps", "1us", "1MiB", "-1MiB", "0", "", "[]", "{}", "null", "1e400GB", "h3", "s1_0"]),
    st.lists(st.integers(0, 20), max_size=4),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.integers(0, len(GOOD)),
    insert=st.text(alphabet=" :{}[],-#\n0123456789abcdefGiBMsu", max_size=12),
)
def test_text_mutations(cut, insert):
    text = GOOD[:cut] + insert + GOOD[cut:]
    try:
        build_scenario(parse_scenario(text, file="f.yaml"))
    except NetsteerError as exc:
        assert exc.message()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from([
    ("topology", "levels"), ("topology", "down"), ("topology", "link_bandwidth"), ("topology", "kind"),
    ("jobs", 0, "flows", 0, "src"), ("jobs", 0, "flows", 0, "bytes"), ("jobs", 0, "name"),
    ("routing", "engine"), ("sharing",), ("sample_interval",),
]), value=values)
def test_field_mutations(path, value):
    import yaml

    data = yaml.safe_load(GOOD)
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    try:
        build_scenario(parse_scenario(yaml.safe_dump(data), file="f.yaml"))
    except NetsteerError as exc:
        assert exc.message()
