"""The SSRF guard's address classes and exemptions (no network: only local names resolve)."""
import pytest

from crawlkit.fetch.guard import AddressGuard, BlockedAddress


@pytest.mark.parametrize("address", [
    "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",   # private
    "127.0.0.1", "127.8.9.10", "::1",                             # loopback
    "169.254.10.10", "fe80::1",                                   # link-local
    "169.254.169.254", "fd00:ec2::254",                           # cloud metadata
    "224.0.0.1", "ff02::1",                                       # multicast
    "0.0.0.0", "::",                                              # unspecified
    "100.64.0.1",                                                 # carrier-grade NAT
    "fc00::1",                                                    # unique local
    "::ffff:127.0.0.1", "::ffff:10.0.0.1",                        # IPv4-mapped
    "240.0.0.1",                                                  # reserved
])
def test_internal_addresses_are_blocked(address):
    assert AddressGuard(True).is_blocked(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2001:4860:4860::8888",
                                     "::ffff:8.8.8.8"])
def test_public_addresses_pass(address):
    assert not AddressGuard(True).is_blocked(address)


def test_allow_private_exempts_cidrs_and_host_names():
    guard = AddressGuard(True, ["127.0.0.1/32", "10.0.0.0/8", "intranet.example"])
    assert not guard.is_blocked("127.0.0.1") and not guard.is_blocked("10.9.9.9")
    assert guard.is_blocked("127.0.0.2") and guard.is_blocked("192.168.0.1")
    assert guard.host_allowed("Intranet.Example.") and not guard.host_allowed("other.example")


def test_guard_off_blocks_nothing():
    guard = AddressGuard(False)
    assert not guard.is_blocked("169.254.169.254")
    assert guard.check_proxied_target("127.0.0.1") is None


def test_direct_resolution_refuses_names_of_internal_addresses():
    with pytest.raises(BlockedAddress) as error:
        AddressGuard(True).resolve("localhost", 80)
    assert error.value.address in ("127.0.0.1", "::1")
    assert AddressGuard(True, ["localhost"]).resolve("localhost", 80)


def test_proxied_targets_judge_literals_and_names_that_resolve():
    guard = AddressGuard(True)
    assert guard.check_proxied_target("169.254.169.254") == "169.254.169.254"
    assert guard.check_proxied_target("[::1]") == "::1"
    assert guard.check_proxied_target("localhost") in ("127.0.0.1", "::1")
    # made-up names (the replay web's) do not resolve here: the proxy's job
    assert guard.check_proxied_target("www.site1.test") is None
    assert guard.check_proxied_target("8.8.8.8") is None


def test_proxied_names_are_not_resolved_when_turned_off():
    guard = AddressGuard(True, resolve_proxied=False)
    assert guard.check_proxied_target("localhost") is None
    assert guard.check_proxied_target("127.0.0.1") == "127.0.0.1"
