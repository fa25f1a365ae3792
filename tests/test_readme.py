"""The README's two set-up commands are the ones CI and users run."""

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _commands():
    text = (ROOT / "README.md").read_text()
    top = text.split("\n## ", 1)[0]
    return [line.strip() for line in top.splitlines() if line.startswith("    ") and line.strip()]


def test_readme_top_has_exactly_two_setup_commands():
    cmds = _commands()
    assert len(cmds) == 2, cmds
    assert cmds[0].startswith("pip install -e . && ") and "mpgraph train" in cmds[0]
    assert cmds[1].startswith("pip install -e '.[test]' && python -m pytest")


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text()
    pattern = re.search(r"sed -n '(.*?)' README.md", script).group(1)
    out = subprocess.run(["sed", "-n", pattern, str(ROOT / "README.md")], capture_output=True, text=True).stdout
    assert out.splitlines()[0] == _commands()[1]
