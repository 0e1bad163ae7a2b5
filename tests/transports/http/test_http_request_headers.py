"""`RequestHeaders`: the request's headers as text, decoded only as far as they are read; Host verdicts from raw values."""

from mcp_resolve.transports.http._wire.headers import RequestHeaders
from mcp_resolve.transports.http._wire.hosts import HostPolicy

PAIRS = [
    (b"host", b"127.0.0.1:8000"),
    (b"x-caller", b"ada"),
    (b"x-caller", b"bo"),
    (b"x-note", "café".encode("latin-1")),
]


def test_reads_by_byte_name_and_by_text_name_agree() -> None:
    headers = RequestHeaders(PAIRS)
    assert headers.value(b"host") == headers.get("host") == headers["host"] == "127.0.0.1:8000"
    assert headers.value(b"absent") is None
    assert headers.get("absent") is None
    assert headers.get("absent", "fallback") == "fallback"


def test_the_first_of_repeated_names_wins_everywhere() -> None:
    headers = RequestHeaders(PAIRS)
    assert headers.value(b"x-caller") == headers.get("x-caller") == headers["x-caller"] == "ada"
    assert dict(headers) == {"host": "127.0.0.1:8000", "x-caller": "ada", "x-note": "café"}
    assert len(headers) == 3


def test_values_are_latin_1_and_a_name_outside_it_is_simply_absent() -> None:
    headers = RequestHeaders(PAIRS)
    assert headers["x-note"] == "café"
    assert headers.get("x-nöte-€") is None
    assert "x-nöte-€" not in headers
    assert "x-note" in headers


def test_iteration_keeps_the_order_the_client_sent() -> None:
    assert list(RequestHeaders(PAIRS)) == ["host", "x-caller", "x-note"]


def test_host_verdicts_by_raw_value_match_the_text_check_and_stay_bounded() -> None:
    """A hostile client sending a new Host on every request cannot grow the remembered verdicts."""
    policy = HostPolicy(["example.com", "api.example.com:8443"])
    cases = {
        b"example.com": True,
        b"example.com:1234": True,
        b"api.example.com:8443": True,
        b"api.example.com:80": False,
        b"evil.example": False,
        None: False,
    }
    for _ in range(2):  # the second pass is answered from memory
        for raw, allowed in cases.items():
            assert policy.allows_raw(raw) is allowed
            assert policy.allows(None if raw is None else raw.decode("latin-1")) is allowed
    for n in range(1000):
        assert policy.allows_raw(b"attacker-%d.example" % n) is False
    assert policy.allows_raw.cache_info().currsize <= 256  # type: ignore[attr-defined]
    assert policy.allows_raw(b"example.com") is True
