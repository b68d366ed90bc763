"""`weir`: what each command line stands for, and that it reaches the module behind it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from weir_deploy.cli import DEPLOY, SETTINGS, Call, main, plan

pytestmark = pytest.mark.unit
CHAT, INGEST = "weir_gateway.client:main", "weir_rag.batch:main"
COMMANDS = ("run", "up", "chat", "ingest", "dlq", "doctor", "settings")


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    """The commands configure structlog for the captured stderr; later tests log elsewhere."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (["run"], Call(DEPLOY, ["run"])),
        (["run", "--services", "gateway", "router", "--kafka-impl", "tansu"],
         Call(DEPLOY, ["run", "--services", "gateway", "router", "--kafka-impl", "tansu"])),
        (["-v", "run", "--traces"], Call(DEPLOY, ["-v", "run", "--traces"])),
        (["up", "--engines", "kafka", "redis"],
         Call(DEPLOY, ["up", "--engines", "kafka", "redis"])),
        (["doctor"], Call(DEPLOY, ["doctor"])),
        (["-v", "doctor"], Call(DEPLOY, ["doctor"])),
        (["chat"], Call(CHAT, [])),
        (["chat", "--url", "ws://h:1/ws/chat", "--token", "t"],
         Call(CHAT, ["--url", "ws://h:1/ws/chat", "--token", "t"])),
        (["ingest", "docs", "--collection", "c"], Call(INGEST, ["docs", "--collection", "c"])),
        (["ingest", "--help"], Call(INGEST, ["--help"])),
        (["dlq", "list"], Call(DEPLOY, ["dlq", "list"])),
        (["dlq", "show", "weir.chat.requested"],
         Call(DEPLOY, ["dlq", "list", "weir.chat.requested"])),
        (["dlq", "show", "t.dlq", "--limit", "0"],
         Call(DEPLOY, ["dlq", "list", "t.dlq", "--limit", "0"])),
        (["dlq", "replay", "t", "--limit", "5"],
         Call(DEPLOY, ["dlq", "replay", "t", "--limit", "5"])),
        (["settings"], Call(SETTINGS, [])),
        (["settings", "--check", "README.md"], Call(SETTINGS, ["--check", "README.md"])),
        (["settings", "--write", "R.md"], Call(SETTINGS, ["--write", "R.md"])),
    ],
)  # fmt: skip
def test_command_lines_map_to_their_modules(argv: list[str], call: Call) -> None:
    assert plan(argv) == call


@pytest.mark.parametrize(
    "argv",
    [[], ["bogus"], ["dlq"], ["dlq", "show"], ["dlq", "replay"], ["dlq", "list", "--nope"],
     ["settings", "--write", "a", "--check", "b"]],
)  # fmt: skip
def test_bad_command_lines_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        plan(argv)
    assert exited.value.code == 2
    assert "usage: weir" in capsys.readouterr().err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        plan(["--help"])
    out = capsys.readouterr().out
    assert all(f"    {name} " in out for name in COMMANDS), out


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "weir"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert all(f"    {name} " in done.stdout for name in COMMANDS), done.stdout


def test_a_command_passes_its_options_to_its_module(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert "--kafka-impl" in capsys.readouterr().out  # weir_deploy's own `run` parser
    assert main(["ingest", "--help"]) == 0
    assert "--manifest" in capsys.readouterr().out


def test_ingest_refuses_a_job_without_documents(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest"]) == 2
    err = capsys.readouterr().err
    assert "usage: weir ingest" in err
    assert "give a folder or --manifest" in err


def test_chat_names_a_weir_it_cannot_reach(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "--url", "ws://127.0.0.1:9/ws/chat"]) == 1
    assert "cannot reach weir at ws://127.0.0.1:9/ws/chat" in capsys.readouterr().err


def test_doctor_checks_the_binaries(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "java (17+)" in out
    assert "redis-server" in out
    assert code == (1 if "MISSING" in out else 0)


def test_settings_prints_and_checks_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["settings"]) == 0
    assert "| `LLM_MODEL` |" in capsys.readouterr().out
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- settings:begin -->\nold\n<!-- settings:end -->\n")
    assert main(["settings", "--check", str(readme)]) == 1
    assert "make settings-doc" in capsys.readouterr().err
    assert main(["settings", "--write", str(readme)]) == 0
    assert main(["settings", "--check", str(readme)]) == 0
    assert "| `LLM_MODEL` |" in readme.read_text()
