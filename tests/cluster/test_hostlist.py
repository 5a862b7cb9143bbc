"""Slurm host lists: expansion (padding as written, several ranges and brackets) and compression."""

import pytest
from hypothesis import given, strategies as st

from hpcsched.cluster.hostlist import compress_hostlist, expand_hostlist, split_outside_brackets


def test_expansion_keeps_the_padding_as_written():
    assert expand_hostlist("spartan-bm[053-056]") == [
        "spartan-bm053", "spartan-bm054", "spartan-bm055", "spartan-bm056"]
    # no leading zero: no padding (HPCsim would pad to 3 digits; Slurm does not)
    assert expand_hostlist("n[8-11]") == ["n8", "n9", "n10", "n11"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"]


def test_expansion_of_lists_singles_and_several_brackets():
    assert expand_hostlist("a[1,3-4],b7,c[09]") == ["a1", "a3", "a4", "b7", "c09"]
    # the last bracket varies fastest, as Slurm expands rack[0-1]n[1-2]
    assert expand_hostlist("r[0-1]n[1-2]") == ["r0n1", "r0n2", "r1n1", "r1n2"]
    assert expand_hostlist("plain") == ["plain"]


@pytest.mark.parametrize("bad", ["n[3-1]", "n[a-b]", "n[1-", "n[]", "n[1,,2]", "n1]"])
def test_malformed_lists_are_refused(bad):
    with pytest.raises(ValueError):
        expand_hostlist(bad)


def test_split_ignores_commas_inside_brackets_and_parentheses():
    assert split_outside_brackets("a[1,2],gpu:a100:2(S:0,1),b") == ["a[1,2]", "gpu:a100:2(S:0,1)", "b"]


def test_compression_merges_ranges_per_prefix_and_width():
    assert compress_hostlist(["bm087", "bm099", "bm100", "bm101"]) == "bm[087,099-101]"
    assert compress_hostlist(["n9", "n10", "n11", "login"]) == "n[9-11],login"
    assert compress_hostlist(["x5"]) == "x5"


names = st.lists(st.tuples(st.sampled_from(["n", "gpu", "bm"]), st.integers(0, 120),
                           st.sampled_from([0, 3])), min_size=1, max_size=40, unique=True)


@given(names)
def test_compression_round_trips(hosts):
    hosts = list(dict.fromkeys(f"{p}{i:0{w}d}" for p, i, w in hosts))
    assert sorted(expand_hostlist(compress_hostlist(hosts))) == sorted(hosts)
