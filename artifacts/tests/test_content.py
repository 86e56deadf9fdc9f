"""Content sniffing and file names: the client's word is never taken."""

from __future__ import annotations

import pytest

from artifacts.content import ContentRefused, Sniffer, safe_filename
from artifacts.tests.factories import PNG


def sniff(data: bytes, name: str, max_bytes: int = 1024 * 1024) -> str:
    sniffer = Sniffer(max_bytes=max_bytes)
    for i in range(0, len(data), 7):  # odd chunk sizes split multi-byte characters
        sniffer.feed(data[i : i + 7])
    return sniffer.content_type(name)


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (b"plain words\n", "notes.txt", "text/plain"),
        (b"plain words\n", "README", "text/plain"),
        ('{"naïve": "é"}'.encode(), "data.json", "application/json"),
        (b'{"a": 1}\n{"a": 2}\n', "events.jsonl", "application/x-ndjson"),
        (b"key: value\n", "pack.yaml", "application/yaml"),
        (b"a,b\n1,2\n", "table.csv", "text/csv"),
        (b"# Title\n", "report.md", "text/markdown"),
        (PNG, "chart.png", "image/png"),
        (PNG, "chart", "image/png"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "paper.pdf", "application/pdf"),
        (b"PK\x03\x04" + b"\x00" * 30, "bundle.zip", "application/zip"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 10, "logs.tar.gz", "application/gzip"),
        (b"", "empty.txt", "text/plain"),
    ],
)
def test_it_sniffs_the_type_from_the_content(data, name, expected):
    assert sniff(data, name) == expected


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (b"<html><script>alert(1)</script></html>", "page.txt", "HTML, SVG and XML content is not accepted"),
        (b"\xef\xbb\xbf  <!DOCTYPE html><p>hi", "notes", "HTML, SVG and XML content is not accepted"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"/>', "logo.txt", "HTML, SVG and XML content is not accepted"),
        (b"plain", "page.html", ".html files are not accepted"),
        (b"plain", "logo.SVG", ".svg files are not accepted"),
        (b"alert(1)", "app.js", ".js files are not accepted"),
        (b"not an image", "photo.png", "named .png but its content is text/plain"),
        (PNG, "chart.txt", "named .txt but its content is image/png"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "tool", "not one of the accepted types"),
        (b"caf\xe9 latin-1", "notes.txt", "not one of the accepted types"),
    ],
)
def test_it_refuses_what_is_not_on_the_allowlist(data, name, message):
    with pytest.raises(ContentRefused) as caught:
        sniff(data, name)
    assert caught.value.code == "unsupported_media_type"
    assert message in caught.value.message


def test_it_refuses_a_file_over_the_limit_as_soon_as_it_is_seen():
    sniffer = Sniffer(max_bytes=10)
    sniffer.feed(b"12345")
    with pytest.raises(ContentRefused) as caught:
        sniffer.feed(b"678901")
    assert caught.value.code == "payload_too_large"


def test_it_hashes_and_counts_what_it_reads():
    sniffer = Sniffer(max_bytes=100)
    sniffer.feed(b"hello")
    assert sniffer.size == 5
    assert sniffer.sha256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\report.pdf", "report.pdf"),
        ('a"b<c>d|e?.txt', "abcde.txt"),
        ("evil\r\nX-Header: 1.txt", "evilX-Header 1.txt"),
        ("  .hidden. ", "hidden"),
        ("", "artifact"),
        ("..", "artifact"),
        ("x" * 300 + ".json", "x" * 195 + ".json"),
    ],
)
def test_it_sanitises_file_names(name, expected):
    assert safe_filename(name) == expected
