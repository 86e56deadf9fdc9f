"""The egress rule shared by http_request and the sandbox proxy, as pure functions (no connections)."""

from __future__ import annotations

import ipaddress

import pytest

from engine.net.guard import (
    EgressPolicy,
    NetworkPolicyError,
    check_target,
    parse_allow_entry,
    resolve_destination,
)
from engine.sandbox import SandboxConfig, SandboxConfigError

DEFAULT = EgressPolicy()


@pytest.mark.parametrize(
    "text,network,port",
    [
        ("10.0.0.0/8", "10.0.0.0/8", None),
        (" 10.1.2.3/8 ", "10.0.0.0/8", None),
        ("10.0.0.0/8:443", "10.0.0.0/8", 443),
        ("2001:db8::/32", "2001:db8::/32", None),
        ("[2001:db8::/32]:8443", "2001:db8::/32", 8443),
        ("[2001:db8::/32]", "2001:db8::/32", None),
    ],
)
def test_allow_entries_parse(text, network, port):
    entry = parse_allow_entry(text)
    assert entry.network == ipaddress.ip_network(network) and entry.port == port


@pytest.mark.parametrize("text", ["10.0.0.0/8:0", "10.0.0.0/8:65536", "10.0.0.0/8:http", "[::1", "[::1]x", "example.com:80", "10.0.0.0/33"])
def test_bad_allow_entries_are_refused(text):
    with pytest.raises(ValueError):
        parse_allow_entry(text)


@pytest.mark.parametrize(
    "address,reason",
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "cgnat"),
        ("169.254.1.1", "link_local"),
        ("169.254.169.254", "metadata"),
        ("169.254.170.2", "metadata"),
        ("100.100.100.200", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("::ffff:169.254.169.254", "metadata"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fe80::1", "link_local"),
        ("::ffff:127.0.0.1", "ipv4_mapped"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("2002:7f00:1::", "6to4"),
        ("64:ff9b::a9fe:a9fe", "nat64"),
    ],
)
def test_default_policy_refuses_internal_addresses(address, reason):
    assert DEFAULT.refusal(address, 80) == reason


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "172.32.0.1", "100.128.0.1"])
def test_default_policy_allows_public_addresses_on_any_port(address):
    assert DEFAULT.refusal(address, 443) is None and DEFAULT.refusal(address, 22) is None


def test_pack_allowlist_alone_never_opens_private_ranges():
    policy = EgressPolicy.build(["10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10", "fc00::/7"])
    for address, reason in [("10.1.1.1", "private"), ("127.0.0.1", "loopback"), ("169.254.1.1", "link_local"), ("100.64.1.1", "cgnat")]:
        assert policy.refusal(address, 80) == reason
    assert policy.refusal("fd00::1", 80) == "private"


def test_private_allowlist_opens_only_what_the_pack_also_allowlists():
    private = ["10.0.0.0/8", "127.0.0.0/8"]
    assert EgressPolicy.build([], private).refusal("10.1.1.1", 80) == "private"  # pack asks for nothing
    assert EgressPolicy.build(["10.0.0.0/8"], private).refusal("10.1.1.1", 80) is None
    assert EgressPolicy.build(["10.0.0.0/8"], ["10.2.0.0/16"]).refusal("10.1.1.1", 80) == "private"
    assert EgressPolicy.build(["10.2.0.0/16"], private).refusal("10.1.1.1", 80) == "not_allowlisted"
    assert EgressPolicy.build(["127.0.0.0/8"], private).refusal("::ffff:127.0.0.1", 80) is None


def test_some_addresses_stay_refused_whatever_the_allowlists():
    everything = EgressPolicy.build(["0.0.0.0/0", "::/0"], ["0.0.0.0/0", "::/0"])
    assert everything.refusal("169.254.169.254", 80) == "metadata"
    assert everything.refusal("fd00:ec2::254", 80) == "metadata"
    assert everything.refusal("0.0.0.0", 80) == "unspecified"
    assert everything.refusal("239.1.1.1", 80) == "multicast"
    assert everything.refusal("10.0.0.1", 80) is None


def test_non_empty_pack_allowlist_restricts_public_addresses_and_ports():
    policy = EgressPolicy.build(["93.184.216.0/24:443", "203.0.114.0/24"])
    assert policy.refusal("93.184.216.34", 443) is None
    assert policy.refusal("93.184.216.34", 80) == "port_not_allowed"
    assert policy.refusal("8.8.8.8", 443) == "not_allowlisted"
    assert policy.refusal("203.0.114.9", 25) is None  # no port on the entry: any port
    both = EgressPolicy.build(["93.184.216.0/24:443", "93.184.216.0/24:8443"])
    assert both.refusal("93.184.216.1", 8443) is None and both.refusal("93.184.216.1", 22) == "port_not_allowed"


def test_private_port_entries_apply_too():
    policy = EgressPolicy.build(["127.0.0.1/32:8080"], ["127.0.0.0/8"])
    assert policy.refusal("127.0.0.1", 8080) is None
    assert policy.refusal("127.0.0.1", 6379) == "port_not_allowed"
    assert policy.refusal("127.0.0.1", 5432) == "port_not_allowed"


class CountingResolver:
    def __init__(self, table: dict[str, list[str]]):
        self.table, self.calls = table, 0

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls += 1
        if host not in self.table:
            raise OSError("nxdomain")
        return self.table[host]


@pytest.mark.parametrize("host", ["metadata.google.internal", "METADATA.google.internal.", "metadata", "instance-data.ec2.internal"])
def test_metadata_names_are_refused_before_dns(host):
    resolver = CountingResolver({host: ["93.184.216.34"]})
    with pytest.raises(NetworkPolicyError) as info:
        resolve_destination(host, 80, DEFAULT, resolver)
    assert info.value.reason == "metadata" and resolver.calls == 0


def test_resolve_once_and_refuse_if_any_answer_is_refused():
    resolver = CountingResolver({"mixed.test": ["93.184.216.34", "10.0.0.1"], "ok.test": ["93.184.216.34", "93.184.216.35"]})
    with pytest.raises(NetworkPolicyError) as info:
        resolve_destination("mixed.test", 443, DEFAULT, resolver)
    assert info.value.reason == "private"
    assert resolve_destination("ok.test", 443, DEFAULT, resolver) == ipaddress.ip_address("93.184.216.34")
    assert resolver.calls == 2  # one lookup per decision: the connection uses the checked address


@pytest.mark.parametrize(
    "host,reason", [("2130706433", "loopback"), ("0x7f.1", "loopback"), ("[::ffff:a9fe:a9fe]", "metadata"), ("0", "unspecified")]
)
def test_numeric_host_forms(host, reason):
    with pytest.raises(NetworkPolicyError) as info:
        resolve_destination(host, 80, DEFAULT, CountingResolver({}))
    assert info.value.reason == reason


def test_dns_failure_is_a_refusal_with_a_reason():
    with pytest.raises(NetworkPolicyError) as info:
        resolve_destination("nxdomain.test", 80, DEFAULT, CountingResolver({}))
    assert info.value.reason == "dns_failed" and str(info.value) == "dns resolution failed"


def test_check_target_uses_the_policy_for_http_request():
    loop = EgressPolicy.build(["127.0.0.0/8"])
    with pytest.raises(NetworkPolicyError, match="target host is blocked by network policy"):
        check_target("http://127.0.0.1:8080/", loop)
    target = check_target("http://127.0.0.1:8080/", EgressPolicy.build(["127.0.0.0/8"], ["127.0.0.0/8"]))
    assert str(target.ip) == "127.0.0.1"


# ----------------------------------------------------------------------------- operator settings
def test_operator_network_off_wins_over_the_pack():
    cfg = SandboxConfig.from_manifest({"sandbox": {"network_access": True}, "tool_policy": {"allow_network": True}})
    assert cfg.allow_network
    cfg.apply_operator_network("off", ["10.0.0.0/8"])
    assert not cfg.allow_network and cfg.network_mode == "off"


def test_operator_private_allowlist_reaches_the_policy():
    cfg = SandboxConfig.from_manifest({"sandbox": {"network_access": True, "network_allowlist": ["10.0.0.0/8:8443"]}})
    cfg.apply_operator_network("allowlist", [" 10.0.0.0/8 ", ""])
    assert cfg.private_allowlist == ("10.0.0.0/8",)
    assert cfg.egress_policy.refusal("10.1.1.1", 8443) is None
    assert cfg.egress_policy.refusal("10.1.1.1", 22) == "port_not_allowed"


def test_bad_operator_values_fail_loudly():
    with pytest.raises(SandboxConfigError):
        SandboxConfig().apply_operator_network("open")
    with pytest.raises(ValueError):
        SandboxConfig().apply_operator_network("allowlist", ["10.0.0.0/33"])


def test_manifest_allowlist_accepts_ports_and_refuses_garbage():
    cfg = SandboxConfig.from_manifest({"sandbox": {"network_allowlist": ["10.0.0.0/8:443", "[2001:db8::/32]:443"]}})
    assert cfg.network_allowlist == ("10.0.0.0/8:443", "[2001:db8::/32]:443")
    with pytest.raises(SandboxConfigError, match="not a valid CIDR"):
        SandboxConfig.from_manifest({"sandbox": {"network_allowlist": ["api.example.com:443"]}})
