#!/usr/bin/env bash
# Builds the loopdbg Python package and installs it the way its README
# says, into a fresh virtualenv at ${LOOPDBG_PYTHON_ENV:-target/python},
# with what its pytest suite needs (crates/python/tests/requirements.txt):
#   1. scripts/build-wheel.sh: the CLI in release, then the abi3 wheel
#      carrying it, in target/wheels (as the release workflow builds the
#      wheels for PyPI);
#   2. `pip install ./crates/python` into the fresh virtualenv: the path
#      install a user makes from a clone (maturin again through PEP 517,
#      on cargo's warm target directory, so only the last link is redone);
#   3. the suite's pinned requirements (the anthropic and openai SDKs,
#      Dask distributed, pyarrow, DuckDB).
# tests/python.rs then runs the suite. Usage: scripts/install-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${LOOPDBG_PYTHON_ENV:-target/python}
if ! command -v python3 >/dev/null 2>&1; then
  echo "python: python3 not found; tests/python.rs will skip the package's suite" >&2
  exit 0
fi
rm -rf "$dest" target/wheels
python3 -m venv "$dest"
pip=("$dest/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" "maturin>=1.9,<2"
MATURIN="$dest/bin/maturin" scripts/build-wheel.sh target/wheels
ls target/wheels/loopdbg-*-abi3-*.whl
"${pip[@]}" ./crates/python
"${pip[@]}" -r crates/python/tests/requirements.txt
"$dest/bin/python" -c 'import loopdbg, sys; print("python: loopdbg installed from", loopdbg.__file__, "on", sys.version.split()[0])'
echo "python: $("$dest/bin/loopdbg" --version) on the virtualenv's PATH"
# The same abi3 wheel on the oldest and the newest CPython the machine has
# (3.9, the floor pyproject.toml declares, and 3.13), each in its own
# virtualenv with pytest alone: tests/python.rs runs the checks there.
for version in 3.9 3.13; do
  other="$dest-$version"
  rm -rf "$other"
  # pyenv's versions are looked for first: its shims answer only for the
  # versions it has been told to use.
  interpreter=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python"$version" 2>/dev/null | tail -n 1)
  [ -n "$interpreter" ] || interpreter=$(command -v "python$version" || true)
  if [ -z "$interpreter" ] || ! "$interpreter" -m venv "$other" 2>/dev/null; then
    echo "python: no python$version here; tests/python.rs says it skipped it"
    continue
  fi
  "$other/bin/pip" install --quiet --disable-pip-version-check pytest==8.3.5 target/wheels/loopdbg-*-abi3-manylinux*.whl
  "$other/bin/python" -c 'import loopdbg, sys; print("python: the wheel imports on", sys.version.split()[0])'
done
