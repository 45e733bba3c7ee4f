#!/usr/bin/env bash
# The GPU check (issue 33): one command, at most 8 minutes, on a bare GPU machine with no network. It installs the
# carried wheels, prints the versions and the device, runs the GPU tests (tests/test_cuda.py), the model-step
# comparison with transformers and the engine against its bare step (benchmarks/bench_gpu_step.py), a small lineage
# run (--scale small), and the whole suite with -n and -v (failures named as they happen); each phase is time-limited
# and logged to $OUT, and $OUT/gpu_check.json sums them up. The suite runs last, in the time that is left.
#
#   here:   bash benchmarks/gpu_wheels.sh                    (the wheels into .whl/, ignored by git)
#   there:  the device tool's run, carry [".whl"], command "bash benchmarks/gpu_check.sh"
#
# Without a GPU it runs the same phases at toy sizes (the benchmark says so), to check the script.
set -u
OUT=${OUT:-gpu_check_out}
BUDGET=${GPU_CHECK_SECONDS:-470}
mkdir -p "$OUT"
T0=$(date +%s)
SUMMARY="$OUT/phases.tsv"
: > "$SUMMARY"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PY=${PYTHON:-python3}

phase() {  # phase NAME SECONDS COMMAND...: run it with a time limit, log to $OUT/NAME.log, record exit code and time
    local name=$1 limit=$2 started rc
    shift 2
    local left=$(( BUDGET - ($(date +%s) - T0) ))
    (( limit > left )) && limit=$left
    if (( limit < 10 )); then
        echo "=== $name: skipped, out of time"; printf '%s\t%s\t%s\n' "$name" skipped 0 >> "$SUMMARY"; return
    fi
    echo "=== $name (at most ${limit}s; $(( $(date +%s) - T0 ))s since start)"
    started=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
    rc=$?
    tail -n 40 "$OUT/$name.log"
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - started ))" >> "$SUMMARY"
    echo "=== $name: exit $rc in $(( $(date +%s) - started ))s"
}

install() {
    if [ -d .whl ]; then
        "$PY" -m pip install -q --no-index --no-build-isolation --find-links .whl "tokenizers==0.23.3" \
            datasets evaluate nltk seqeval rouge_score || return 1
    fi
    "$PY" -m pip install -q --no-index --no-build-isolation --no-deps -e . || return 1
    "$PY" - <<'PYTHON'
import platform, subprocess, torch, transformers, accelerate, tokenizers, datasets, hf_lineage
print("python", platform.python_version(), "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| transformers", transformers.__version__, "| accelerate", accelerate.__version__, "| tokenizers",
      tokenizers.__version__, "| datasets", datasets.__version__, "| hf_lineage", hf_lineage.__version__)
print("device:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")
print(subprocess.run(["lscpu"], capture_output=True, text=True).stdout.split("Model name:")[-1].splitlines()[0].strip())
PYTHON
}

export -f install
phase install 120 bash -c install
if ! "$PY" -c "import hf_lineage" 2>/dev/null; then  # no editable install (no setuptools there): the tree itself
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
phase cuda_tests 90 env HF_LINEAGE_TEST_CUDA=1 "$PY" -m pytest tests/test_cuda.py -v -p no:cacheprovider
phase model_steps 200 "$PY" benchmarks/bench_gpu_step.py --compile --corpus hf_lineage/samples/lineage/corpus.train.txt \
    --json "$OUT/gpu_step.json"
phase lineage_small 150 "$PY" -m hf_lineage.lineage --scale small --families word2vec gpt bert --tasks labeling pairs \
    --budget-words 300000 --task-train 1000 --curve-sizes --variants --output-dir /tmp/lineage_small
phase suite 600 "$PY" -m pytest -n "${GPU_CHECK_WORKERS:-14}" -v -p no:cacheprovider tests

"$PY" - "$OUT" <<'PYTHON'
import json, os, sys
out = sys.argv[1]
phases = [dict(zip(("phase", "exit", "seconds"), line.rstrip("\n").split("\t"))) for line in open(f"{out}/phases.tsv")]
summary = {"phases": phases}
if os.path.exists(f"{out}/gpu_step.json"):
    summary["model_steps"] = json.load(open(f"{out}/gpu_step.json"))
if os.path.exists("/tmp/lineage_small/results.json"):
    results = json.load(open("/tmp/lineage_small/results.json"))
    summary["lineage_small"] = {"seconds_total": results.get("seconds_total"), "machine": results.get("machine"),
                                "stages_not_ok": [f"{c['task']}-{c['family']}-{c['variant']}: {c.get('error')}"
                                                  for c in results["finetuning"] if c["status"] != "ok"]}
json.dump(summary, open(f"{out}/gpu_check.json", "w"), indent=1)
print(json.dumps(phases))
PYTHON
echo "gpu_check: $(( $(date +%s) - T0 ))s in all"
