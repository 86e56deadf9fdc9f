"""Host globs that bind a workspace secret to where tools may send it (engine.tools.secret_hosts)."""

from __future__ import annotations

import pytest

from engine.tools import secret_hosts as sh


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("api.example.com", "api.example.com"),
        ("  API.Example.COM. ", "api.example.com"),
        ("*.example.org:443", "*.example.org:443"),
        ("Bücher.DE", "xn--bcher-kva.de"),
        ("*.bücher.de:8443", "*.xn--bcher-kva.de:8443"),
        ("10.1.2.3", "10.1.2.3"),
        ("10.1.2.3:8080", "10.1.2.3:8080"),
        ("[2001:DB8::1]:443", "[2001:db8::1]:443"),
        ("2001:db8::1", "[2001:db8::1]"),
        ("internal_svc.corp", "internal_svc.corp"),
        ("localhost", "localhost"),
    ],
)
def test_patterns_are_normalised(text, canonical):
    assert sh.normalise([text]) == [canonical]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("https://api.example.com", "leave out the scheme"),
        ("api.example.com/v1", "without a path"),
        ("api.example.com?x=1", "without a path"),
        ("user@api.example.com", "user name"),
        ("*", "bare *"),
        ("*:443", "bare *"),
        ("*example.com", "bare *"),
        ("api.*.example.com", "whole first label"),
        ("*.com", "too broad"),
        ("*.10.0.0.1", "IP address"),
        ("*.0.0.1", "IP address"),
        ("10.1.2", "neither a host name nor an IP"),
        ("api.example.com:0", "1 to 65535"),
        ("api.example.com:70000", "1 to 65535"),
        ("api.example.com:https", "1 to 65535"),
        ("api.example.com:", "port is missing"),
        ("bad host.com", "without a path"),
        ("-bad-.com", "not a valid host name"),
        ("[zz::1]", "IPv6"),
        ("", "Enter a host"),
    ],
)
def test_bad_patterns_say_what_is_wrong(text, says):
    with pytest.raises(sh.HostPatternError, match=None) as info:
        sh.normalise([text])
    assert says in str(info.value)


def test_duplicates_collapse_and_the_count_is_capped():
    assert sh.normalise(["a.example.com", "A.EXAMPLE.COM", "b.example.com"]) == ["a.example.com", "b.example.com"]
    with pytest.raises(sh.HostPatternError, match="At most 50"):
        sh.normalise([f"h{i}.example.com" for i in range(51)])


@pytest.mark.parametrize(
    ("patterns", "url", "allowed"),
    [
        (["api.example.com"], "https://api.example.com/v1", True),
        (["api.example.com"], "https://api.example.com:8443/v1", True),  # no port: any port, over https
        (["api.example.com"], "http://api.example.com/v1", False),  # no port: https only
        (["api.example.com:80"], "http://api.example.com/v1", True),  # plain HTTP is declared by its port
        (["api.example.com"], "https://API.EXAMPLE.COM./v1", True),
        (["api.example.com"], "https://evil.api.example.com/", False),
        (["api.example.com"], "https://api.example.com.evil.test/", False),
        (["api.example.com"], "https://apiexample.com/", False),
        (["api.example.com:443"], "https://api.example.com/", True),
        (["api.example.com:443"], "http://api.example.com/", False),  # port 80
        (["*.example.org"], "https://a.example.org/", True),
        (["*.example.org"], "https://a.b.example.org/", True),
        (["*.example.org"], "https://example.org/", False),
        (["*.example.org"], "https://badexample.org/", False),
        (["xn--bcher-kva.de"], "https://bücher.de/", True),
        (["10.1.2.3:8080"], "http://10.1.2.3:8080/", True),
        (["10.1.2.3"], "http://167838211/", False),  # numeric forms are not the literal an admin wrote
        (["[2001:db8::1]"], "https://[2001:db8::1]:8443/", True),
        (["[2001:db8::1]"], "http://[2001:db8::1]:80/", False),
        (["api.example.com"], "ftp://api.example.com/", False),
        (["api.example.com"], "not a url", False),
        ([], "https://api.example.com/", False),
    ],
)
def test_destinations_match_patterns(patterns, url, allowed):
    assert sh.allowed(patterns, url) is allowed


def test_a_wildcard_never_matches_an_ip_literal():
    pattern = sh.HostPattern("0.1", wildcard=True)  # what "*.0.1" would be if it were allowed
    assert not pattern.matches("10.0.0.1", 80)
