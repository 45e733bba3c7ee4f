#!/usr/bin/env bash
# Fetch, on a machine with network, what benchmarks/gpu_check.sh installs on a GPU machine without network: the
# packages hf-lineage needs that the GPU image lacks (or holds below our floors: tokenizers), as wheels for
# CPython 3.12 on x86-64 Linux in .whl/ (ignored by git; name it in the device call's carry). The image's list is in
# the device tool's KINDS.md; it holds torch, transformers, accelerate, numpy, scipy, pandas, pyarrow, scikit-learn,
# numba, matplotlib, sacrebleu, pytest-xdist. gensim (a 28 MB wheel, the tests' word2vec reference) does not fit the
# 64 MiB a device call carries beside the repository (48 MB, a third of it the shipped checkpoints): its tests skip
# there, and CI runs them. The check reads the package's embedded corpus, so no data travels either.
#
#     bash benchmarks/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
platforms=()
for n in 2_28 2_27 2_17 2_5; do platforms+=(--platform "manylinux_${n}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64)
# Binary wheels, each with the dependencies the image lacks (dill, multiprocess for datasets).
# datasets and fsspec travel together: datasets caps fsspec, and the image's own may be newer than the cap.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
    -d .whl "tokenizers==0.23.3" "datasets==5.2.0" "fsspec==2026.9.0" "dill==0.4.1" "multiprocess==0.70.19" \
    "evaluate==0.4.6" "nltk==3.10.4"
# seqeval and rouge_score are published as source only: gpu_check.sh builds them there (no build isolation).
python3 -m pip download -q --no-deps --no-binary=:all: -d .whl "seqeval==1.2.2" "rouge_score==0.1.2"
du -sh .whl
ls .whl
