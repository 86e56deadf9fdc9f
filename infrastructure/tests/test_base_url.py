"""Provider base URL rules (runtime.md §7.4) as pure classification: no connection is made."""

from __future__ import annotations

import pytest

from infrastructure.base_url import BaseUrlError, address_block_reason, base_url_check, base_url_shape_error


def resolver_to(*answers: str):
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return list(answers)

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


def failing_resolver(host: str, port: int) -> list[str]:
    raise OSError("no such host")


@pytest.mark.parametrize(
    "url", ["https://api.openai.com/v1", "https://api.anthropic.com", "https://llm.example.org:8443/openai/v1/", "https://8.8.8.8/v1"]
)
def test_it_accepts_public_https_urls(url):
    assert base_url_shape_error(url) is None


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://api.openai.com/v1", "https://"),
        ("ftp://api.openai.com", "https://"),
        ("api.openai.com/v1", "https://"),
        ("https:///v1", "https://"),
        ("https://user:pass@api.openai.com", "credentials"),
        ("https://user@api.openai.com", "credentials"),
        ("https://api.openai.com/v1?key=1", "query"),
        ("https://api.openai.com/v1?", "query"),
        ("https://api.openai.com/v1#top", "fragment"),
        ("https://[fe80::1%25eth0]/v1", "zone"),
        ("https://api.openai.com:99999/", "valid"),
    ],
)
def test_it_rejects_malformed_urls(url, fragment):
    assert fragment in (base_url_shape_error(url) or "")


@pytest.mark.parametrize(
    "host",
    [
        "localhost", "LOCALHOST", "localhost.", "metadata", "instance-data", "metadata.google.internal", "app.localhost", "printer.local",
        "db.internal", "router.home.arpa", "x.test", "x.invalid", "x.example",
    ],
)  # fmt: skip
def test_it_rejects_special_hostnames(host):
    assert "special-use" in (base_url_shape_error(f"https://{host}/v1") or "")


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "[::1]",
        "[fc00::1]",
        "[fe80::1]",
        "[::ffff:127.0.0.1]",
        "2130706433",
        "0x7f.1",
    ],
)
def test_it_rejects_private_ip_literals(host):
    assert "private" in (base_url_shape_error(f"https://{host}/v1") or "")


@pytest.mark.parametrize(
    "address",
    [
        "0.1.2.3", "10.1.1.1", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1",
        "192.31.196.1", "192.52.193.1", "192.88.99.1", "192.168.0.1", "192.175.48.1", "198.18.0.1", "198.19.255.255", "198.51.100.1",
        "203.0.113.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
        "::", "::1", "::127.0.0.1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "64:ff9b:1::1", "100::1", "2001::1", "2001:db8::1", "2002::1",
        "2620:4f:8000::1", "3fff::1", "5f00::1", "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "4000::1",
    ],
)  # fmt: skip
def test_it_blocks_special_purpose_addresses(address):
    assert address_block_reason(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "2a00:1450::1"])
def test_it_allows_public_global_unicast_addresses(address):
    assert address_block_reason(address) is None


def test_it_checks_the_whole_dns_answer():
    assert [str(a) for a in base_url_check("https://api.example.org/v1", resolver=resolver_to("8.8.8.8", "2606:4700::1"))] == [
        "8.8.8.8",
        "2606:4700::1",
    ]
    with pytest.raises(BaseUrlError) as exc:
        base_url_check("https://api.example.org/v1", resolver=resolver_to("8.8.8.8", "10.0.0.7"))
    assert "private" in str(exc.value)
    assert "10.0.0.7" not in str(exc.value)  # messages never echo resolved addresses


def test_it_reports_unresolvable_hosts():
    with pytest.raises(BaseUrlError) as exc:
        base_url_check("https://nowhere.example.org", resolver=failing_resolver)
    assert "could not be resolved" in str(exc.value)
    with pytest.raises(BaseUrlError):
        base_url_check("https://nowhere.example.org", resolver=resolver_to())


def test_ip_literals_are_not_resolved():
    resolve = resolver_to("10.0.0.1")
    assert [str(a) for a in base_url_check("https://8.8.8.8/v1", resolver=resolve)] == ["8.8.8.8"]
    assert resolve.calls == []


def test_the_operator_setting_allows_local_http_servers_but_not_credentials():
    assert base_url_shape_error("http://localhost:11434/v1", allow_private=True) is None
    assert base_url_shape_error("http://127.0.0.1:8000/v1", allow_private=True) is None
    assert base_url_check("http://10.0.0.5/v1", allow_private=True, resolver=failing_resolver) == []
    assert "credentials" in (base_url_shape_error("http://u:p@localhost/v1", allow_private=True) or "")
    assert "query" in (base_url_shape_error("http://localhost/v1?x=1", allow_private=True) or "")
