"""The action's step scripts, run directly, with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and
GITHUB_PATH pointed at temp files and a fake `flowproof` on PATH that logs its arguments."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.action.root import ACTION_ROOT
from tests.action.steps import Step, runner_temp, step

FAKE_FLOWPROOF = textwrap.dedent("""\
    #!/usr/bin/env bash
    # Logs its arguments (one a line), writes the reports it is asked for, exits $FAKE_CODE.
    printf '%s\\n' "$@" "--end-of-call--" >>"$FAKE_LOG"
    [ "$1" = run ] || set --  # only `run` writes reports; `github comment` reads --markdown
    while [ $# -gt 0 ]; do
      case "$1" in
        --junit) [ -n "${FAKE_NO_REPORTS:-}" ] || printf '%s\\n' \\
            '<?xml version="1.0" encoding="UTF-8"?>' \\
            "<testsuites name=\\"flowproof\\" tests=\\"${FAKE_TESTS:-3}\\" failures=\\"${FAKE_FAILURES:-1}\\" errors=\\"${FAKE_ERRORS:-0}\\" time=\\"0.100\\">" \\
            '  <testsuite name="flowproof" tests="9" failures="9" errors="9" skipped="0"/>' \\
            '</testsuites>' >"$2"; shift ;;
        --html) [ -n "${FAKE_NO_REPORTS:-}" ] || echo '<html></html>' >"$2"; shift ;;
        --markdown) [ -n "${FAKE_NO_REPORTS:-}" ] || echo '### flowproof' >"$2"; shift ;;
      esac
      shift
    done
    echo "fake flowproof ran" >&2
    exit "${FAKE_CODE:-0}"
    """)


@pytest.fixture
def runner(tmp_path: Path) -> Path:
    temp = runner_temp(tmp_path)
    fake = tmp_path / "bin" / "flowproof"
    fake.write_text(FAKE_FLOWPROOF)
    fake.chmod(0o755)
    return temp


# -- setup.sh -------------------------------------------------------------------------------


def setup_env(**overrides: str) -> dict[str, str]:
    return {
        "ACTION_PATH": str(ACTION_ROOT),
        "IN_VERSION": "",
        "IN_COMMENT": "auto",
        "IN_FAIL_ON_FAILURE": "true",
        "IN_UPLOAD_REPORT": "true",
        "FP_BIN": "",
        **overrides,
    }


def test_setup_pins_this_releases_version(runner: Path) -> None:
    done = step("setup.sh", runner, **setup_env(RUNNER_TOOL_CACHE=str(runner / "tools")))
    assert done.code == 0, done.stderr
    assert done.outputs["version"] == "0.1.0"
    assert done.outputs["install-dir"] == str(runner / "tools" / "flowproof" / "0.1.0")
    assert done.outputs["install"] == "true"
    assert Path(done.outputs["report-dir"]).is_dir()
    assert Path(done.outputs["report-dir"]).parent == runner


def test_setup_takes_a_version_and_a_binary(runner: Path) -> None:
    done = step("setup.sh", runner, **setup_env(IN_VERSION="v1.2.3", FP_BIN="/opt/fp"))
    assert done.code == 0, done.stderr
    assert done.outputs["version"] == "1.2.3"
    assert done.outputs["install-dir"] == str(runner / "flowproof" / "1.2.3")
    assert done.outputs["install"] == "false"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "IN_COMMENT",
            "sometimes",
            "input comment is 'sometimes'; use one of: auto always on-failure never",
        ),
        ("IN_FAIL_ON_FAILURE", "yes", "input fail-on-failure is 'yes'; use one of: true false"),
        ("IN_UPLOAD_REPORT", "1", "input upload-report is '1'; use one of: true false"),
        (
            "IN_VERSION",
            "1.0; curl evil",
            "input version is '1.0; curl evil'; give a flowproof version such as 0.1.0",
        ),
    ],
)
def test_setup_refuses_a_bad_input(runner: Path, variable: str, value: str, message: str) -> None:
    done = step("setup.sh", runner, **setup_env(**{variable: value}))
    assert done.code == 2
    assert done.stdout == f"::error title=flowproof::{message}\n"
    assert done.outputs == {}


# -- install.sh -----------------------------------------------------------------------------


def fake_installer(runner: Path) -> Path:
    installer = runner / "install.sh"
    installer.write_text(
        'echo "installer: $FLOWPROOF_VERSION $FLOWPROOF_INSTALL_DIR $FLOWPROOF_BIN_DIR"\n'
        'mkdir -p "$FLOWPROOF_BIN_DIR" && echo "$FLOWPROOF_BIN_DIR" >>"$GITHUB_PATH"\n'
    )
    return installer


def install_step(runner: Path, target: Path, *, cache_hit: str) -> Step:
    """The action's install step, with the fake installer and version 0.1.0 into `target`."""
    return step(
        "install.sh",
        runner,
        INSTALLER=str(fake_installer(runner)),
        FLOWPROOF_VERSION="0.1.0",
        FLOWPROOF_INSTALL_DIR=str(target),
        CACHE_HIT=cache_hit,
    )


def test_install_runs_the_installer_on_a_cache_miss(runner: Path) -> None:
    target = runner / "tools" / "0.1.0"
    done = install_step(runner, target, cache_hit="")
    assert done.code == 0, done.stderr
    assert done.stdout == f"installer: 0.1.0 {target} {target}/bin\n"
    assert done.path == f"{target}/bin\n"


def test_install_uses_a_cache_hit_without_the_installer(runner: Path) -> None:
    target = runner / "tools" / "0.1.0"
    (target / "bin").mkdir(parents=True)
    (target / "bin" / "flowproof").write_text("#!/bin/sh\n")
    (target / "bin" / "flowproof").chmod(0o755)
    done = install_step(runner, target, cache_hit="true")
    assert done.code == 0, done.stderr
    assert "installer:" not in done.stdout
    assert done.path == f"{target}/bin\n"


def test_install_reinstalls_when_the_cache_hit_holds_no_binary(runner: Path) -> None:
    target = runner / "tools" / "0.1.0"
    done = install_step(runner, target, cache_hit="true")
    assert done.code == 0, done.stderr
    assert done.stdout.startswith("installer: 0.1.0")


def test_install_without_the_installer_is_an_error(runner: Path) -> None:
    done = step(
        "install.sh",
        runner,
        INSTALLER=str(runner / "missing.sh"),
        FLOWPROOF_VERSION="0.1.0",
        FLOWPROOF_INSTALL_DIR=str(runner / "x"),
    )
    assert done.code == 2
    assert "the installer is missing from the action" in done.stdout


# -- run.sh ---------------------------------------------------------------------------------


def run_env(runner: Path, **overrides: str) -> dict[str, str]:
    report = runner / "report"
    report.mkdir(exist_ok=True)
    settings = {"SPECS": "specs/", "ARGS": "", "FP_BIN": "", "REPORT_DIR": str(report)}
    return {**settings, "TRACE_LINT": "false", **overrides}


def test_run_records_the_code_and_the_counts_and_succeeds(runner: Path) -> None:
    done = step("run.sh", runner, FAKE_CODE="1", **run_env(runner))
    report = runner / "report"
    assert done.code == 0, done.stderr
    assert done.outputs == {
        "report-dir": str(report),
        "exit-code": "1",
        "passed": "2",
        "failed": "1",
        "errors": "0",
        "junit": f"{report}/junit.xml",
        "html": f"{report}/report.html",
        "markdown": f"{report}/comment.md",
    }
    assert done.calls == [
        [
            "run",
            "specs/",
            "--junit",
            f"{report}/junit.xml",
            "--html",
            f"{report}/report.html",
            "--markdown",
            f"{report}/comment.md",
        ]
    ]
    assert "fake flowproof ran" in done.stderr


def test_run_counts_configuration_errors_apart(runner: Path) -> None:
    done = step("run.sh", runner, FAKE_CODE="2", FAKE_TESTS="4", FAKE_ERRORS="1", **run_env(runner))
    assert (done.outputs["exit-code"], done.outputs["passed"]) == ("2", "2")
    assert (done.outputs["failed"], done.outputs["errors"]) == ("1", "1")


def test_run_passes_specs_and_args_one_per_line_and_literally(runner: Path) -> None:
    specs = "specs/a.yaml\n  specs/with space/  \n\n"
    args = "--runs-dir=$(touch pwned)\n`touch pwned`\n"
    done = step("run.sh", runner, **run_env(runner, SPECS=specs, ARGS=args))
    assert done.code == 0, done.stderr
    assert done.calls[0][:3] == ["run", "specs/a.yaml", "specs/with space/"]
    assert done.calls[0][-2:] == ["--runs-dir=$(touch pwned)", "`touch pwned`"]
    assert not (runner.parent / "pwned").exists()


@pytest.mark.parametrize(("run_code", "lint_code", "reported"), [("0", "1", "1"), ("2", "1", "2")])
def test_run_gates_on_trace_lint_after_the_replay(
    runner: Path, run_code: str, lint_code: str, reported: str
) -> None:
    fake = runner.parent / "bin" / "flowproof"
    real = fake.read_text()
    marker = '"--end-of-call--" >>"$FAKE_LOG"\n'
    fake.write_text(real.replace(marker, marker + '[ "$1" = trace ] && exit "$LINT_CODE"\n'))
    env = run_env(runner, TRACE_LINT="true", FAKE_CODE=run_code, LINT_CODE=lint_code)
    done = step("run.sh", runner, **env)
    assert done.code == 0, done.stderr
    assert [call[:2] for call in done.calls] == [["run", "specs/"], ["trace", "lint"]]
    assert done.calls[1] == ["trace", "lint", "specs/"]
    assert (done.outputs["trace-lint"], done.outputs["exit-code"]) == (lint_code, reported)


def test_run_passes_the_shard_input(runner: Path) -> None:
    done = step("run.sh", runner, **run_env(runner, SHARD="2/4"))
    assert done.code == 0, done.stderr
    assert done.calls[0][-2:] == ["--shard", "2/4"]
    unsharded = step("run.sh", runner, **run_env(runner))
    assert "--shard" not in unsharded.calls[0]


def test_run_without_a_report_says_so_in_the_summary(runner: Path) -> None:
    done = step("run.sh", runner, FAKE_CODE="2", FAKE_NO_REPORTS="1", **run_env(runner))
    assert done.code == 0
    assert done.outputs == {"report-dir": str(runner / "report"), "exit-code": "2"}
    message = (
        "flowproof exited with code 2 before writing its report; its messages are in the log "
        "of this step"
    )
    assert done.stdout == f"::error title=flowproof::{message}\n"
    assert done.summary == f"### flowproof\n\n{message}.\n"


def test_run_without_flowproof_outputs_exit_code_2(runner: Path) -> None:
    done = step("run.sh", runner, path="/usr/bin:/bin", **run_env(runner))
    assert done.code == 0
    assert done.outputs["exit-code"] == "2"
    assert "cannot find flowproof ('flowproof' is not on PATH" in done.stdout


def test_run_uses_the_flowproof_bin_input(runner: Path) -> None:
    fake = str(runner.parent / "bin" / "flowproof")
    done = step("run.sh", runner, path="/usr/bin:/bin", **run_env(runner, FP_BIN=fake))
    assert done.outputs["exit-code"] == "0"
    assert done.calls


# -- comment.sh -----------------------------------------------------------------------------


def comment_env(runner: Path, mode: str, code: str, **overrides: str) -> dict[str, str]:
    markdown = runner / "comment.md"
    markdown.write_text("### flowproof\n")
    return {
        "MODE": mode,
        "CODE": code,
        "MARKER": "flowproof",
        "MARKDOWN": str(markdown),
        "ARTIFACT_URL": "",
        "FP_BIN": "",
        "GITHUB_TOKEN": "t",
        **overrides,
    }


@pytest.mark.parametrize(
    ("mode", "code", "flags"),
    [
        ("always", "0", []),
        ("always", "1", []),
        ("on-failure", "1", []),
        ("on-failure", "0", None),
        ("auto", "1", []),
        ("auto", "2", []),
        ("auto", "0", ["--update-only"]),
        ("never", "1", None),
    ],
)
def test_comment_follows_the_mode(
    runner: Path, mode: str, code: str, flags: list[str] | None
) -> None:
    done = step("comment.sh", runner, **comment_env(runner, mode, code))
    assert done.code == 0, done.stderr
    if flags is None:
        assert done.calls == []
    else:
        markdown = str(runner / "comment.md")
        base = ["github", "comment", "--markdown", markdown, "--marker", "flowproof"]
        assert done.calls == [base + flags]


def test_comment_links_the_artifact(runner: Path) -> None:
    url = "https://github.com/acme/agents/actions/runs/1/artifacts/2"
    done = step("comment.sh", runner, **comment_env(runner, "always", "1", ARTIFACT_URL=url))
    assert done.code == 0, done.stderr
    posted = Path(done.calls[0][3])
    assert posted.read_text() == f"### flowproof\n\n[Full report (HTML and JUnit)]({url})\n"


def test_comment_without_a_report_is_a_notice(runner: Path) -> None:
    done = step("comment.sh", runner, **comment_env(runner, "always", "2", MARKDOWN=""))
    assert done.code == 0
    assert (
        done.stdout
        == "::notice title=flowproof::no comment: flowproof wrote no report (exit code 2)\n"
    )
    assert done.calls == []


def test_a_failed_comment_fails_the_step(runner: Path) -> None:
    done = step("comment.sh", runner, FAKE_CODE="2", **comment_env(runner, "always", "1"))
    assert done.code == 2  # action.yml's continue-on-error keeps the verdict flowproof's


# -- finish.sh ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fail", "expected"),
    [
        ("0", "true", 0),
        ("1", "true", 1),
        ("1", "false", 0),
        ("2", "false", 2),
        ("3", "true", 3),
        ("", "true", 2),
        ("1;x", "true", 2),
    ],
)
def test_finish_exits_with_flowproofs_code(
    runner: Path, code: str, fail: str, expected: int
) -> None:
    done = step("finish.sh", runner, CODE=code, FAIL_ON_FAILURE=fail, ARTIFACT_URL="")
    assert done.code == expected, done.stdout
    if code == "1" and fail == "false":
        assert done.stdout == (
            "::notice title=flowproof::flows failed; the job goes on because "
            "fail-on-failure is false\n"
        )
    assert done.summary == ""


def test_finish_links_the_artifact_in_the_summary(runner: Path) -> None:
    url = "https://github.com/acme/agents/actions/runs/1/artifacts/2"
    done = step("finish.sh", runner, CODE="0", FAIL_ON_FAILURE="true", ARTIFACT_URL=url)
    assert done.code == 0
    assert done.summary == f"\n[Full flowproof report (HTML and JUnit)]({url})\n"
