"""A BuildWidget in a plain Python REPL at a terminal (a pty): the REPL owns the terminal between commands, so the
widget's terminal view never draws from a background thread there; it says so in one line, and a wait follows
the build in the terminal while the prompt is blocked (issue 39, second pass)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator

import pexpect
import pytest
from pty_output import before

PROMPT = ">>> "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def repl() -> Iterator[pexpect.spawn[str]]:
    env = dict(os.environ, TRT_WIDGET_HISTORY="off", TERM="xterm-256color", PYTHON_BASIC_REPL="1")
    child = pexpect.spawn(sys.executable, ["-q"], env=env, encoding="utf-8", timeout=180, dimensions=(40, 120))
    child.expect_exact(PROMPT)
    child.sendline("from trt_widget import BuildWidget, models")
    child.expect_exact(PROMPT)
    yield child
    child.sendline("raise SystemExit(0)")
    child.expect(pexpect.EOF)
    child.close()


def run(child: pexpect.spawn[str], line: str) -> str:
    """``line`` typed at the prompt; what the terminal showed until the next prompt (escape codes removed)."""
    child.sendline(line)
    child.expect_exact(PROMPT)
    return ANSI.sub("", before(child)).replace("\r", "")


def test_a_started_widget_draws_nothing_over_the_repls_prompt(repl: pexpect.spawn[str]) -> None:
    shown = run(repl, 'w = BuildWidget(models.deep_residual(100), history=False, isolation="thread").start()')
    # the build runs and ends while the REPL waits for input: nothing is drawn meanwhile
    quiet = run(repl, "print('ENDED', w.build.wait(300))")  # the build's own wait, not the widget's
    assert "ENDED succeeded" in quiet, quiet
    everything = shown + quiet
    assert "Building engine" not in everything and "Succeeded in" not in everything, everything
    said = [line for line in shown.splitlines()[1:] if line.strip()]  # after the echoed command
    assert len(said) == 1 and "in the background" in said[0] and ".wait()" in said[0], shown  # one line, and how
    # the widget says its state when asked. Its traits follow the build on the pump's thread, which the widget's wait
    # joins: the build's own wait can return before that thread has written the end (seen under load: "running")
    asked = run(repl, "print('ENDED', w.wait(), w.status)")
    assert "ENDED succeeded succeeded" in asked and "Building engine" not in asked, asked  # and draws nothing more


def test_a_wait_at_the_prompt_follows_the_build_in_the_terminal(repl: pexpect.spawn[str]) -> None:
    run(repl, 'w = BuildWidget(models.deep_residual(100), history=False, isolation="thread").start()')
    shown = run(repl, "w.wait()")
    assert "Building engine" in shown and "Succeeded in" in shown, shown  # the tree and summary, while it blocks
    assert shown.rstrip().endswith("'succeeded'"), shown  # then the wait's value, then the prompt
    after = run(repl, "print('NEXT')")  # nothing more is drawn once the prompt is back
    assert after.strip().splitlines()[-1] == "NEXT" and "Building" not in after, after


def test_a_ctrl_c_in_a_wait_at_the_prompt_says_the_build_is_stopping(repl: pexpect.spawn[str]) -> None:
    """Ctrl-C in ``w.wait()`` asks the build to stop (the KeyboardInterrupt says so): the line left under the tree
    said the build "goes on building in the background", which was false."""
    run(repl, "w = BuildWidget(models.deep_residual(1500), history=False).start()")
    repl.sendline("w.wait()")
    repl.expect_exact("Building engine")  # the wait follows the build: the tree is drawn
    repl.sendintr()
    repl.expect_exact(PROMPT)
    shown = ANSI.sub("", before(repl)).replace("\r", "")
    assert "the build was asked to stop" in shown, shown
    assert "goes on building" not in shown, shown
    assert "is stopping" in shown or "Cancelled after" in shown, shown  # or it had ended by then: the summary
    assert "cancelled" in run(repl, "print(w.wait())")
