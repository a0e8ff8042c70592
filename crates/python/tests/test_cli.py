"""The ``loopdbg`` command the wheel installs (loopdbg._cli): it hands
over to the program the wheel carries; a wheel built without it says how
to get one and exits 2, the exit of an unusable command. tests/python.rs
runs the installed command itself."""

import subprocess
import sys

import loopdbg._cli as cli


def test_a_wheel_without_the_program_says_so(monkeypatch, capsys):
    monkeypatch.setattr(cli, "binary", lambda: None)
    assert cli.main(["--version"]) == 2
    said = capsys.readouterr().err
    assert "built without the command-line program" in said
    assert "scripts/build-wheel.sh" in said


def test_python_m_loopdbg_runs_the_program():
    if cli.binary() is None:
        # pytest's own environment may hold a wheel built by maturin
        # alone; tests/python.rs fails when the installed ones lack it.
        out = subprocess.run([sys.executable, "-m", "loopdbg", "--version"], capture_output=True, text=True)
        assert out.returncode == 2
        return
    out = subprocess.run([sys.executable, "-m", "loopdbg", "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("loopdbg ")
