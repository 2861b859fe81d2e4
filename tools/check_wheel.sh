#!/usr/bin/env bash
# The release as a user gets it: builds the sdist and, from it, the wheel (python -m build),
# installs the wheel with the headless core only (no extras: no Qt) in a fresh venv outside the
# checkout, and from a folder outside the checkout runs `galaxyview scenes`, a short run, a
# short headless recording (EGL), the README's Python example at small n, and the viewer,
# which without Qt must say in one line how to install it and exit 2.
#
#   tools/check_wheel.sh [PYTHON]    # PYTHON has `build` (default: .venv/bin/python)
#
# KEEP=1 keeps the work folder (printed) for a look at the venv; sizes are printed at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${1:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/galaxyview-wheel.XXXXXX")"
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
start=$SECONDS
step() { echo "check_wheel: $* ($((SECONDS - start)) s)"; }
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }

step "building the sdist and the wheel"
"$PYTHON" -m build --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 \
  || { cat "$WORK/build.log"; fail "python -m build"; }
sdist=$(ls "$WORK"/dist/galaxyview-*.tar.gz)
wheel=$(ls "$WORK"/dist/galaxyview-*.whl)
tar tzf "$sdist" >"$WORK/sdist.txt"
for name in kernels/nbody_walk.cu shaders/particles.vert scenes/antennae.toml LICENSE; do
  grep -q "^galaxyview-[^/]*/$name\$" "$WORK/sdist.txt" || fail "the sdist lacks $name"
done

step "installing the wheel (headless core) in a fresh venv"
# (the venv of the interpreter's base Python, so nothing of the checkout's venv leaks in)
BASE=$("$PYTHON" -c 'import sys; print(sys.base_prefix)')/bin/python3
"$BASE" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" \
  || fail "pip install of the wheel"

step "running it from $WORK/user"
mkdir "$WORK/user" && cd "$WORK/user"
unset PYTHONPATH
export PYTHONNOUSERSITE=1
gv="$WORK/venv/bin/galaxyview"
where=$("$WORK/venv/bin/python" -c 'import galaxyview; print(galaxyview.__file__)')
case "$where" in "$WORK/venv/"*) ;; *) fail "galaxyview imported from $where, not the venv";; esac
for name in kernels shaders scenes; do
  dir=$("$WORK/venv/bin/python" -c "from galaxyview import resources; print(resources.data_dir('$name'))")
  case "$dir" in "$WORK/venv/"*/galaxyview/_data/$name) ;; *) fail "$name found at $dir";; esac
done
"$gv" --version
"$gv" scenes >scenes.txt || fail "galaxyview scenes"
grep -q '^antennae ' scenes.txt || fail "galaxyview scenes lists no antennae"
"$gv" run plummer --n 2000 --steps 5 --backend reference || fail "galaxyview run"
"$gv" record plummer --n 2000 --backend reference -o movie.mp4 --frames 4 --size 160x96 \
  --no-progress || fail "galaxyview record"
[ -s movie.mp4 ] || fail "galaxyview record wrote no movie"

# the README's Python example, on the numpy engine at 2000 particles for 0.05 time units
"$WORK/venv/bin/python" - "$ROOT/README.md" >example.py <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
code = re.sub(r'backend="\w+"', 'backend="reference"', code)
code = re.sub(r"\bn=[\d_]+", "n=2_000", code)
print(re.sub(r"until=[\d.]+", "until=0.05", code))
EOF
"$WORK/venv/bin/python" example.py || { cat example.py; fail "the README's Python example"; }

# the viewer without Qt: one line naming the install command, exit 2, no traceback
set +e
said=$("$gv" antennae 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "the viewer without Qt exited $code: $said"
[ "$(printf '%s\n' "$said" | wc -l)" = 1 ] || fail "the viewer without Qt said more than a line: $said"
case "$said" in *"galaxyview[viewer]"*) ;; *) fail "no install command in: $said";; esac
echo "$said"

size=$(du -sh "$WORK"/venv/lib/python3*/site-packages | cut -f1)
step "passed: sdist $(du -h "$sdist" | cut -f1), wheel $(du -h "$wheel" | cut -f1), installed core $size"
if [ "${KEEP:-0}" = 1 ]; then echo "check_wheel: kept $WORK"; fi
