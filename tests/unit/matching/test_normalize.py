"""normalize: today's facts become placeholders in requests and come back in responses."""

from __future__ import annotations

from datetime import date

import pytest

from flowproof.matching.normalize import (
    Environment,
    Normalizer,
    ShortValue,
    UnsetVariable,
    checked_entry,
)

CWD = "/home/casey/src/shop"
HOME = "/home/casey"


def make_env(**changes: object) -> Environment:
    values: dict[str, object] = {
        "cwd": (CWD,),
        "home": (HOME,),
        "tmpdir": ("/tmp",),
        "user": "casey",
        "hostname": "build-7.example",
        "utc": date(2026, 12, 1),
        "local": date(2026, 12, 1),
        "variables": {"PROJECT": "acme-shop"},
    }
    values.update(changes)
    return Environment(**values)  # type: ignore[arg-type]


def test_each_fact_becomes_its_placeholder_and_comes_back() -> None:
    normalizer = Normalizer.build(["cwd", "home", "user", "hostname", "${PROJECT}"], make_env())
    body = {
        "messages": [
            {"role": "system", "content": f"cwd {CWD}, home {HOME}, user casey on build-7.example"},
            {"role": "user", "content": "work on acme-shop"},
        ]
    }
    stored = normalizer.to_placeholders(body)
    assert stored["messages"][0]["content"] == (
        "cwd {{flowproof.cwd}}, home {{flowproof.home}}, user {{flowproof.user}} on "
        "{{flowproof.hostname}}"
    )
    assert stored["messages"][1]["content"] == "work on {{flowproof.env.PROJECT}}"
    assert normalizer.from_placeholders(stored) == body


def test_the_longest_value_wins_and_nothing_is_rewritten_twice() -> None:
    # cwd lies inside home, and the user name is inside both and inside "{{flowproof.home}}"'s
    # neighbours: one pass, longest first, leaves each occurrence one placeholder.
    normalizer = Normalizer.build(["user", "home", "cwd"], make_env(user="casey"))
    stored = normalizer.to_placeholders(f"{CWD}/a.py {HOME}/.rc casey")
    assert stored == "{{flowproof.cwd}}/a.py {{flowproof.home}}/.rc {{flowproof.user}}"


def test_a_placeholder_is_not_rescanned_for_a_short_value_inside_it() -> None:
    normalizer = Normalizer.build(["cwd", "user"], make_env(user="flowproof"))
    assert normalizer.to_placeholders(CWD) == "{{flowproof.cwd}}"


def test_tool_call_arguments_in_a_response_are_restored_to_todays_checkout() -> None:
    recorded = Normalizer.build(["cwd"], make_env())
    stored = recorded.to_placeholders({"arguments": f'{{"path": "{CWD}/notes.txt"}}'})
    assert stored == {"arguments": '{"path": "{{flowproof.cwd}}/notes.txt"}'}
    today = Normalizer.build(["cwd"], make_env(cwd=("/ci/checkout",)))
    assert today.from_placeholders(stored) == {"arguments": '{"path": "/ci/checkout/notes.txt"}'}


def test_today_in_every_spelling_utc_and_local() -> None:
    env = make_env(utc=date(2026, 12, 1), local=date(2026, 12, 2))
    normalizer = Normalizer.build(["date"], env)
    text = (
        "Today's date: 2026-12-02. UTC: 2026-12-01. Wed Dec 02 2026 / Tue Dec 01 2026, "
        "December 2, 2026 and December 1, 2026, Wednesday or Tuesday"
    )
    assert normalizer.to_placeholders(text) == (
        "Today's date: {{flowproof.date}}. UTC: {{flowproof.date}}. {{flowproof.date.text}} / "
        "{{flowproof.date.text}}, {{flowproof.date.long}} and {{flowproof.date.long}}, "
        "{{flowproof.weekday}} or {{flowproof.weekday}}"
    )
    # A placeholder comes back as the LOCAL day, spelled as it was.
    assert normalizer.from_placeholders("{{flowproof.date.long}} ({{flowproof.weekday}})") == (
        "December 2, 2026 (Wednesday)"
    )


def test_a_recorded_date_matches_another_day() -> None:
    recorded = Normalizer.build(["date"], make_env())
    tomorrow = Normalizer.build(["date"], make_env(utc=date(2026, 12, 1), local=date(2026, 12, 2)))
    assert recorded.to_placeholders("on 2026-12-01") == tomorrow.to_placeholders("on 2026-12-02")


def test_dict_keys_are_normalised_too_and_other_values_kept() -> None:
    normalizer = Normalizer.build(["cwd"], make_env())
    assert normalizer.to_placeholders({CWD: [1, True, None, 2.5]}) == {
        "{{flowproof.cwd}}": [1, True, None, 2.5]
    }


def test_nothing_declared_returns_the_body_itself() -> None:
    body = {"a": CWD}
    assert Normalizer().to_placeholders(body) is body


@pytest.mark.parametrize(
    ("entry", "env", "message"),
    [
        (
            "user",
            make_env(user="bob"),
            "normalize: user is 'bob', 3 characters here; values shorter than 4 characters are "
            "refused, since replacing them would rewrite unrelated text in every body",
        ),
        (
            "home",
            make_env(home=("",)),
            "normalize: home is empty here; values shorter than 4 characters are refused, "
            "since replacing them would rewrite unrelated text in every body",
        ),
        (
            "${PROJECT}",
            make_env(variables={"PROJECT": "ab"}),
            "normalize: ${PROJECT} is 2 characters here; values shorter than 4 characters are "
            "refused, since replacing them would rewrite unrelated text in every body",
        ),
    ],
)
def test_a_short_or_empty_value_is_refused(entry: str, env: Environment, message: str) -> None:
    with pytest.raises(ShortValue) as caught:
        Normalizer.build([entry], env)
    assert str(caught.value) == message


def test_an_unset_variable_is_refused() -> None:
    with pytest.raises(UnsetVariable, match=r"normalize: \$\{NOPE\} is not set"):
        Normalizer.build(["${NOPE}"], make_env())


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("cwdd", "unknown fact 'cwdd'; did you mean 'cwd'? (or `${VAR}` for a variable's value)"),
        (
            "",
            "an entry is empty; name a fact (cwd, home, tmpdir, user, hostname, date) or a "
            "variable (`${VAR}`)",
        ),
        (
            "${flowproof.cwd}",
            "'${flowproof.cwd}' is not a `${VAR}` reference to an environment "
            "variable (letters, digits and `_`; `${flowproof.*}` handles are not facts)",
        ),
    ],
)
def test_entries_are_facts_or_variables(entry: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        checked_entry(entry)
    assert str(caught.value) == message


DEFAULTS = ("cwd", "home", "tmpdir")


def test_a_default_fact_is_replaced_in_every_spelling_and_its_slug() -> None:
    normalizer = Normalizer.build([], make_env(), DEFAULTS)
    text = (
        f"in {CWD} (~/src/shop), state in ~/.agent/projects/-home-casey-src-shop/ and "
        "home-casey-src-shop.json, home /home/casey, scratch /tmp/x"
    )
    assert normalizer.to_placeholders(text) == (
        "in {{flowproof.cwd}} ({{flowproof.cwd}}), state in "
        "~/.agent/projects/-{{flowproof.cwd.slug}}/ and {{flowproof.cwd.slug}}.json, "
        "home {{flowproof.home}}, scratch {{flowproof.tmpdir}}/x"
    )
    moved = Normalizer.build([], make_env(cwd=("/ci/w/shop",), home=("/ci/home",)), DEFAULTS)
    assert moved.from_placeholders("{{flowproof.cwd}} -{{flowproof.cwd.slug}}") == (
        "/ci/w/shop -ci-w-shop"
    )
    assert normalizer.normalized == DEFAULTS


def test_a_default_path_or_slug_inside_a_longer_name_is_left_alone() -> None:
    normalizer = Normalizer.build([], make_env(cwd=("/work/app",)), DEFAULTS)
    text = "/var/tmp /tmpfiles /work/apps network-app /work/app-old end /work/app."
    assert normalizer.to_placeholders(text) == (
        "/var/tmp /tmpfiles /work/apps network-app /work/app-old end {{flowproof.cwd}}."
    )
    assert normalizer.to_placeholders("work-app -work-app-src") == (
        "{{flowproof.cwd.slug}} -{{flowproof.cwd.slug}}-src"
    )


def test_a_default_value_too_short_is_skipped_without_a_word() -> None:
    env = make_env(cwd=("/",), home=("/",), tmpdir=("/tmp",))
    normalizer = Normalizer.build([], env, DEFAULTS)
    assert normalizer.to_placeholders("/ /tmp/x /root") == "/ {{flowproof.tmpdir}}/x /root"
    # A one-segment path has no slug: `/root` would make the word `root` a placeholder.
    assert Normalizer.build([], make_env(home=("/root",)), ("home",)).to_placeholders(
        "root /root"
    ) == ("root {{flowproof.home}}")


def test_a_declared_fact_without_the_defaults_keeps_its_exact_rule() -> None:
    """A trace recorded before the defaults is matched as it was recorded: no slug, no ~,
    replaced wherever it occurs."""
    normalizer = Normalizer.build(["cwd"], make_env())
    assert normalizer.to_placeholders(f"{CWD}s ~/src/shop home-casey-src-shop") == (
        "{{flowproof.cwd}}s ~/src/shop home-casey-src-shop"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no-date", "'date' is not normalised by default, so there is nothing to opt out of"),
        ("no-cdw", "unknown default fact 'cdw' in 'no-cdw'; did you mean 'no-cwd'?"),
    ],
)
def test_an_opt_out_names_a_default_fact(text: str, problem: str) -> None:
    assert checked_entry("no-home") == "no-home"
    with pytest.raises(ValueError) as caught:
        checked_entry(text)
    assert str(caught.value) == problem
