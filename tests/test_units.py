import pytest

from topologies.errors import UnitError
from topologies.units import (format_bandwidth, format_size, format_time, parse_bandwidth, parse_size,
                              parse_size_range, parse_time)


@pytest.mark.parametrize("text, value", [
    ("800Gb/s", 1e11), ("400Gb/s", 5e10), ("400Gbps", 5e10), ("900GB/s", 9e11), ("1.8TB/s", 1.8e12),
    ("50GiB/s", 50 * 2**30), ("100 Mb/s", 12.5e6), ("25GB/s", 25e9), ("1.5e2GB/s", 150e9),
])
def test_bandwidth(text, value):
    assert parse_bandwidth(text) == pytest.approx(value, rel=1e-15)


def test_bits_and_bytes_differ_by_eight():
    assert parse_bandwidth("800GB/s") == 8 * parse_bandwidth("800Gb/s")


def test_si_and_binary_differ():
    assert parse_size("1MB") == 10**6
    assert parse_size("1MiB") == 2**20
    assert parse_bandwidth("1GiB/s") == 2**30 and parse_bandwidth("1GB/s") == 1e9


@pytest.mark.parametrize("text, value", [("0.5us", 5e-7), ("500ns", 5e-7), ("1.2ms", 1.2e-3), ("2s", 2.0),
                                         ("3µs", 3e-6)])
def test_time(text, value):
    assert parse_time(text) == value


@pytest.mark.parametrize("text, value", [("64MiB", 64 * 2**20), ("8GiB", 8 * 2**30), ("4096B", 4096),
                                         ("1KiB", 1024), ("2kB", 2000), (123, 123)])
def test_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("bad", ["800G", "5", "1.8T", "GB/s", "800 GBps", "-1Gb/s", "0Gb/s", "nanGB/s", "800Gb", 5,
                                 None, True])
def test_bandwidth_rejections_say_what_is_accepted(bad):
    with pytest.raises(UnitError) as exc:
        parse_bandwidth(bad, field="link")
    msg = str(exc.value)
    assert msg.startswith("link: ") and "\n" not in msg
    assert "Gb/s" in msg or "GB/s" in msg


@pytest.mark.parametrize("bad", ["64M", "5.5", "8Gib", "1Mb", "x"])
def test_size_rejections(bad):  # a plain whole number ("5") is bytes since robustness round 5
    with pytest.raises(UnitError, match="size"):
        parse_size(bad, field="size")


@pytest.mark.parametrize("bad", ["5", "0.5u", "1 hour", "-1s"])
def test_time_rejections(bad):
    with pytest.raises(UnitError):
        parse_time(bad)


def test_size_range_like_nccl_tests():
    assert parse_size_range("1KiB:8KiB") == [1024, 2048, 4096, 8192]
    assert parse_size_range("1MiB:64MiB:x4") == [2**20, 2**22, 2**24, 2**26]
    for bad in ("8KiB:1KiB", "1KiB", "1KiB:2KiB:x1", "1KiB:2KiB:3"):
        with pytest.raises(UnitError):
            parse_size_range(bad)


def test_formatting():
    assert format_bandwidth(4.5e11) == "450.0 GB/s"
    assert format_size(8 * 2**30) == "8 GiB"
    assert format_time(2.5e-5) == "25.0 us"
    assert format_time(1.5) == "1.50 s"
