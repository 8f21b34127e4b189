"""The facts measured for one flow, the suite's lists joined to the flow's, agent.cwd."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from flowproof.core.errors import SpecError
from flowproof.engine.environment import request_rules
from flowproof.engine.workdir import agent_cwd, refuse_writes_inside
from flowproof.spec.load import load_spec
from flowproof.spec.suite import load_suite

NOW = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)


def write_spec(directory: Path, extra: str) -> Path:
    path = directory / "specs" / "flow.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "name: Coding agent\napp: agent\nagent:\n  command: python3 agent.py\n"
        f"{extra}steps:\n  - prompt: go\n"
    )
    return path


def test_a_short_value_at_run_time_is_a_spec_error_at_its_entry(tmp_path: Path) -> None:
    loaded = load_spec(write_spec(tmp_path, "normalize:\n  - cwd\n  - user\n"))
    with pytest.raises(SpecError) as caught:
        request_rules(loaded, None, {"USER": "bob", "HOME": "/home/bob"}, NOW)
    assert str(caught.value) == (
        f"{loaded.path}:7: normalize: user is 'bob', 3 characters here; values shorter than 4 "
        "characters are refused, since replacing them would rewrite unrelated text in every "
        "body; drop the entry from normalize:, or run where its value has at least 4 "
        "characters"
    )


def test_an_unset_variable_names_its_entry(tmp_path: Path) -> None:
    loaded = load_spec(write_spec(tmp_path, 'normalize: ["${WORKSPACE}"]\n'))
    with pytest.raises(SpecError, match=r"flow.yaml:5: normalize: \$\{WORKSPACE\} is not set"):
        request_rules(loaded, None, {}, NOW)


def test_the_suite_lists_come_first_and_each_entry_once(tmp_path: Path) -> None:
    suite_path = tmp_path / "flowproof.yaml"
    suite_path.write_text('normalize: [home]\nignore_fields: ["metadata.user_id"]\n')
    loaded = load_spec(
        write_spec(tmp_path, "normalize: [cwd, home]\nignore_fields: [prompt_cache_key]\n")
    )
    rules = request_rules(loaded, load_suite(suite_path), {"HOME": "/home/casey"}, NOW)
    assert rules.normalized == ("home", "cwd", "tmpdir")  # the defaults not declared follow
    assert rules.ignored_fields == ("metadata.user_id", "prompt_cache_key")


def test_a_short_value_in_the_suite_names_the_suite_file(tmp_path: Path) -> None:
    suite_path = tmp_path / "flowproof.yaml"
    suite_path.write_text("env: {}\nnormalize:\n  - user\n")
    loaded = load_spec(write_spec(tmp_path, ""))
    with pytest.raises(SpecError) as caught:
        request_rules(loaded, load_suite(suite_path), {"USER": "al"}, NOW)
    assert str(caught.value).startswith(f"{suite_path}:3: normalize: user is 'al'")


def test_home_comes_from_the_environment_the_agent_gets(tmp_path: Path) -> None:
    loaded = load_spec(
        write_spec(tmp_path, "  env:\n    HOME: /srv/agent-home\nnormalize: [home]\n")
    )
    rules = request_rules(loaded, None, {"HOME": "/root"}, NOW)
    assert rules.normalizer.to_placeholders("/srv/agent-home/x /root") == (
        "{{flowproof.home}}/x /root"
    )


def test_cwd_is_the_agents_and_today_is_utc_and_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    loaded = load_spec(write_spec(tmp_path, "  cwd: ../work\nnormalize: [cwd, date]\n"))
    monkeypatch.setenv("TZ", "FPT-14")  # 23:30 UTC on the 1st is the 2nd there
    if hasattr(__import__("time"), "tzset"):
        __import__("time").tzset()
    try:
        rules = request_rules(loaded, None, {}, NOW)
    finally:
        monkeypatch.delenv("TZ")
        __import__("time").tzset()
    work = os.path.realpath(tmp_path / "work")
    assert rules.normalizer.to_placeholders(f"{work} 2026-12-01 2026-12-02 Wednesday") == (
        "{{flowproof.cwd}} {{flowproof.date}} {{flowproof.date}} {{flowproof.weekday}}"
    )
    assert rules.normalizer.from_placeholders("{{flowproof.date}}") == "2026-12-02"


def test_agent_cwd_is_relative_to_the_spec_and_must_exist(tmp_path: Path) -> None:
    loaded = load_spec(write_spec(tmp_path, "  cwd: ../workspace\n"))
    with pytest.raises(SpecError) as caught:
        agent_cwd(loaded, {})
    assert str(caught.value) == (
        f"{loaded.path}:5: agent.cwd: {tmp_path}/workspace is not a directory; create it, or "
        "correct the path (a relative one starts at the spec's directory)"
    )
    (tmp_path / "workspace").mkdir()
    assert agent_cwd(loaded, {}) == tmp_path / "workspace"


def test_flowproof_writes_nothing_inside_an_agent_cwd_of_its_own(tmp_path: Path) -> None:
    loaded = load_spec(write_spec(tmp_path, "  cwd: .\n"))
    cwd = agent_cwd(loaded, {})
    trace = [("its trace", tmp_path / "specs" / "flow.trace.json")]
    with pytest.raises(SpecError) as caught:
        refuse_writes_inside(loaded, cwd, tmp_path, trace)
    assert str(caught.value).startswith(
        f"{loaded.path}:5: agent.cwd {tmp_path}/specs holds its trace "
        f"({tmp_path}/specs/flow.trace.json), which flowproof writes;"
    )
    # Unless the agent runs where flowproof was started, as it does without agent.cwd.
    refuse_writes_inside(loaded, cwd, tmp_path / "specs", trace)
    refuse_writes_inside(loaded, None, tmp_path, trace)
    runs = [("the run records", tmp_path / ".flowproof" / "runs")]
    refuse_writes_inside(loaded, cwd, tmp_path, runs)  # not inside specs/: fine


def test_cwd_home_and_tmpdir_are_normalised_without_being_declared(tmp_path: Path) -> None:
    loaded = load_spec(write_spec(tmp_path, ""))
    rules = request_rules(loaded, None, {"HOME": "/", "TMPDIR": "/srv/scratch"}, NOW)
    # HOME=/ is too short to replace: skipped without a word, since nobody asked for it.
    assert rules.normalized == ("cwd", "tmpdir")
    assert rules.normalizer.defaults == ("cwd", "home", "tmpdir")
    assert rules.normalizer.to_placeholders("/srv/scratch/a srv-scratch") == (
        "{{flowproof.tmpdir}}/a {{flowproof.tmpdir.slug}}"
    )


def test_an_opt_out_keeps_a_default_fact_and_the_flow_decides_over_the_suite(
    tmp_path: Path,
) -> None:
    suite_path = tmp_path / "flowproof.yaml"
    suite_path.write_text("normalize: [no-home, no-tmpdir]\n")
    loaded = load_spec(write_spec(tmp_path, "normalize: [tmpdir, no-cwd]\n"))
    environ = {"HOME": "/home/casey", "TMPDIR": "/srv/scratch"}
    rules = request_rules(loaded, load_suite(suite_path), environ, NOW)
    assert rules.normalizer.defaults == ("tmpdir",)
    assert rules.normalized == ("tmpdir",)
    assert rules.normalizer.to_placeholders("/home/casey /srv/scratch") == (
        "/home/casey {{flowproof.tmpdir}}"
    )


def test_a_replay_normalises_by_default_only_what_its_trace_was_recorded_with(
    tmp_path: Path,
) -> None:
    loaded = load_spec(write_spec(tmp_path, "normalize: [home]\n"))
    environ = {"HOME": "/home/casey", "TMPDIR": "/srv/scratch"}
    older = request_rules(loaded, None, environ, NOW, recorded_defaults=())
    assert older.normalized == ("home",) and older.normalizer.defaults == ()
    # The declared rule as it always was: no slug, replaced wherever it occurs.
    assert older.normalizer.to_placeholders("/srv/scratch home-casey /home/caseys") == (
        "/srv/scratch home-casey {{flowproof.home}}s"
    )
    newer = request_rules(loaded, None, environ, NOW, recorded_defaults=("home", "tmpdir"))
    assert newer.normalizer.defaults == ("home", "tmpdir")


def test_a_fact_kept_and_opted_out_in_one_list_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="'cwd' and 'no-cwd' contradict each other; keep one"):
        load_spec(write_spec(tmp_path, "normalize: [cwd, no-cwd]\n"))
