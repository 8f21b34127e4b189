"""`--shard K/N`: a stable partition of the discovered specs by path."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.cli.flows import in_shard, parse_shard
from flowproof.core.errors import ConfigError

SPECS = [Path(f"specs/{group}/flow_{number}.yaml") for group in "abc" for number in range(40)]


@pytest.mark.parametrize("shards", [1, 2, 3, 4, 5])
def test_the_shards_are_disjoint_and_cover_the_suite(shards: int) -> None:
    parts = [in_shard(SPECS, shard, shards) for shard in range(1, shards + 1)]
    together = [spec for part in parts for spec in part]
    assert sorted(together) == sorted(SPECS) and len(together) == len(set(together))
    assert all(parts)  # 120 specs: no shard is empty


def test_a_flow_keeps_its_shard_when_others_come_and_go() -> None:
    kept = in_shard(SPECS, 2, 4)
    fewer = in_shard([spec for spec in SPECS if "b/" not in spec.as_posix()], 2, 4)
    assert fewer == [spec for spec in kept if "b/" not in spec.as_posix()]


@pytest.mark.parametrize("text", ["0/3", "4/3", "1", "a/b", "2/0", ""])
def test_a_malformed_shard_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="give K/N with 1 ≤ K ≤ N"):
        parse_shard(text)


def test_a_well_formed_shard_parses() -> None:
    assert parse_shard("2/5") == (2, 5)
