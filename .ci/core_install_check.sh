#!/usr/bin/env bash
# The core install (`pip install spurious`, no extras) must work: a fresh venv with only
# the core dependencies lists the analyses and runs a tf-idf audit of SNLI dev. Analyses
# that need an extra (torch for the probes and training dynamics) are skipped with the
# extra to install, never a crash. Run by .ci/run; needs ../shared/data beside the repo.
set -euo pipefail
trap 'echo "core install check: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${CORE_VENV:-.venv-core}
OUT=${CORE_OUT:-runs/core-audit}

rm -rf "$VENV" "$OUT"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet .   # not editable: the wheel must carry templates and schemas
for mod in torch transformers datasets spacy ray; do
  if "$VENV/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$mod') is None)"; then
    echo "core install check: '$mod' is installed in the core venv; the check would prove nothing" >&2
    exit 1
  fi
done
cd /tmp  # run the installed package, not the checkout
export HF_HUB_OFFLINE=1
"$OLDPWD/$VENV/bin/spurious" --help > /dev/null
"$OLDPWD/$VENV/bin/spurious" analyses > /tmp/core-analyses.txt
grep "unavailable" /tmp/core-analyses.txt || true   # what a core install lacks, by extra
grep -q "^partial_input" /tmp/core-analyses.txt
"$OLDPWD/$VENV/bin/spurious" audit "$OLDPWD/../shared/data/snli/dev.jsonl" --task nli --quick \
  --features tfidf --out "$OLDPWD/$OUT"
cd "$OLDPWD"
"$VENV/bin/python" - "$OUT" <<'PY'
import json, sys
manifest = json.load(open(f"{sys.argv[1]}/manifest.json"))
statuses = manifest["statuses"]
print("core audit statuses:", statuses)
assert "failed" not in statuses.values(), statuses
assert statuses.get("atlas") == "ok" and statuses.get("aflite") == "ok", statuses
PY
echo "core install check: ok"
