"""SSRF classification as pure functions (no connections are made here)."""

from __future__ import annotations

import ipaddress

import pytest

from engine.net.guard import (
    NetworkPolicyError,
    check_target,
    clamp_timeout,
    classify_address,
    is_blocked_address,
    parse_allowlist,
    parse_ip_literal,
    redact_headers,
)

BLOCKED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link_local"),
    ("169.254.0.1", "link_local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.255", "cgnat"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "private"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "private"),
    ("255.255.255.255", "private"),
    ("192.0.2.1", "private"),
    ("198.18.0.1", "private"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("fe80::1", "link_local"),
    ("fd00::1", "private"),
    ("fc00::1", "private"),
    ("fec0::1", "site_local"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "ipv4_mapped"),
    ("::ffff:7f00:1", "ipv4_mapped"),
    ("::ffff:169.254.169.254", "ipv4_mapped"),
    ("::127.0.0.1", "ipv4_compatible"),
    ("::10.0.0.1", "ipv4_compatible"),
    ("2002:7f00:0001::", "6to4"),
    ("2002:a9fe:a9fe::1", "6to4"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
    ("64:ff9b::7f00:1", "nat64"),
    ("64:ff9b::a9fe:a9fe", "nat64"),
]


@pytest.mark.parametrize("address,reason", BLOCKED)
def test_blocked_classes(address, reason):
    assert classify_address(address) == reason
    assert is_blocked_address(address)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "172.15.255.255",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.0",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "2002:0808:0808::1",
        "64:ff9b::808:808",
    ],
)
def test_public_addresses_pass(address):
    assert classify_address(address) is None
    assert not is_blocked_address(address)


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1", "0177.0.0.1", "0x7f000001", "127.0.0.1.", "[::1]", "[::ffff:127.0.0.1]"])
def test_numeric_host_forms_are_parsed_and_blocked(host):
    ip = parse_ip_literal(host)
    assert ip is not None and is_blocked_address(ip)


def test_hostnames_are_not_literals():
    assert parse_ip_literal("example.com") is None
    assert parse_ip_literal("deadbeef") is None


def test_allowlist_exempts_and_restricts():
    allow = parse_allowlist(["127.0.0.0/8"])
    assert not is_blocked_address("127.0.0.1", allow)
    assert not is_blocked_address("::ffff:127.0.0.1", allow)
    assert is_blocked_address("8.8.8.8", allow)  # non-empty allowlist = only those CIDRs
    assert is_blocked_address("169.254.169.254", allow)
    assert is_blocked_address("10.0.0.1", ["10.0.0.0/16"]) is False


def fake_resolver(table):
    def resolve(host, port):
        if host not in table:
            raise OSError("nxdomain")
        return table[host]

    return resolve


@pytest.mark.parametrize(
    "url,message",
    [
        ("ftp://example.com/x", "unsupported URL scheme"),
        ("file:///etc/passwd", "unsupported URL scheme"),
        ("gopher://127.0.0.1/", "unsupported URL scheme"),
        ("http:///path", "url host is required"),
        ("http://169.254.169.254/latest/meta-data/", "target host is blocked by network policy"),
        ("http://2130706433/", "target host is blocked by network policy"),
        ("http://0x7f.1/", "target host is blocked by network policy"),
        ("http://[::ffff:127.0.0.1]/", "target host is blocked by network policy"),
        ("http://rebind.test/", "target host resolves to a blocked address"),
        ("http://mixed.test/", "target host resolves to a blocked address"),
        ("http://nxdomain.test/", "dns resolution failed"),
        ("http://user:pw@example.test/", "credentials in the URL are not allowed; use headers"),
    ],
)
def test_check_target_refusals(url, message):
    resolver = fake_resolver({"rebind.test": ["127.0.0.1"], "mixed.test": ["93.184.216.34", "10.0.0.1"], "example.test": ["93.184.216.34"]})
    with pytest.raises(NetworkPolicyError) as info:
        check_target(url, [], resolver)
    assert str(info.value) == message


def test_check_target_pins_first_checked_address():
    target = check_target("https://api.example.test/v1", [], fake_resolver({"api.example.test": ["93.184.216.34", "93.184.216.35"]}))
    assert target.ip == ipaddress.ip_address("93.184.216.34") and target.host == "api.example.test"


def test_allowlisted_name_resolving_to_loopback_passes_check():
    target = check_target("http://svc.test:8080/", parse_allowlist(["127.0.0.0/8"]), fake_resolver({"svc.test": ["127.0.0.1"]}))
    assert str(target.ip) == "127.0.0.1"


def test_response_header_redaction_and_timeout_clamp():
    headers = redact_headers({"Set-Cookie": "a=b", "X-Api-Key": "k", "Content-Type": "text/plain", "WWW-Authenticate": "Basic"})
    assert headers == {
        "Set-Cookie": "[redacted]",
        "X-Api-Key": "[redacted]",
        "Content-Type": "text/plain",
        "WWW-Authenticate": "[redacted]",
    }
    assert clamp_timeout(0) == 30 and clamp_timeout(500) == 60 and clamp_timeout(5) == 5
