"""One trace per spec: a spec whose trace a sibling spec would also record into is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.spec.suite import refuse_shared_trace


def make_files(directory: Path, *names: str) -> None:
    for name in names:
        (directory / name).write_text("name: x\n")


@pytest.mark.parametrize("other", ["booking.yml", "Booking.yaml", "BOOKING.yml"])
def test_a_sibling_recording_into_the_same_trace_is_named(tmp_path: Path, other: str) -> None:
    make_files(tmp_path, "booking.yaml", other)
    with pytest.raises(SpecError) as caught:
        refuse_shared_trace(tmp_path / "booking.yaml")
    assert str(caught.value) == (
        f"{tmp_path}/booking.yaml: {tmp_path}/{other} would record into the same trace, "
        f"{tmp_path}/booking.trace.json; rename one of the two specs (a trace is named after its "
        "spec)"
    )


def test_the_suite_file_and_other_specs_share_nothing(tmp_path: Path) -> None:
    make_files(tmp_path, "flowproof.yml", "flowproof.yaml", "booking.yaml", "booking-v2.yml")
    (tmp_path / "refund.yml").mkdir()  # a directory is not a spec
    make_files(tmp_path, "refund.yaml")
    for spec in ("flowproof.yml", "booking.yaml", "booking-v2.yml", "refund.yaml"):
        refuse_shared_trace(tmp_path / spec)


def test_a_sibling_added_after_a_check_is_refused_at_the_next(tmp_path: Path) -> None:
    """The directory is listed once for all its specs, and again once it has changed."""
    make_files(tmp_path, "booking.yaml", "refund.yaml")
    refuse_shared_trace(tmp_path / "booking.yaml")
    refuse_shared_trace(tmp_path / "refund.yaml")
    make_files(tmp_path, "Booking.yml")
    with pytest.raises(SpecError, match="Booking.yml would record into the same trace"):
        refuse_shared_trace(tmp_path / "booking.yaml")
