#!/usr/bin/env bash
# transformers' common model tests (ModelTesterMixin, tests/test_modeling_common.py of the installed release) on
# lineage BERT (masked LM and causal decoder) and lineage GPT, through tests/test_transformers_common.py.
#
#   bash utils/transformers_common_tests.sh [FOLDER] [pytest options]
#
# .ci/run runs it after the suite, on the newest releases (about 30 s); README's test command does not. It
# downloads the installed transformers release's source archive from PyPI (its tests/ folder holds the common
# mixins, not the per-model tests), unpacks it into FOLDER (default
# /tmp/transformers-common-tests; nothing is copied into this repository) as the package `transformers_tests`,
# installs `parameterized` (the mixins' one extra requirement) there, and runs the lineage testers against it.
# The archive lacks tests/generation/test_utils.py and tests/exporters/, so GenerationTesterMixin and
# ExportTesterMixin are empty stand-ins: generation and torch.export tests do not run here (tests/
# test_transformers_conventions.py covers generation). Run it the day a transformers release lands.
set -euo pipefail
cd "$(dirname "$0")/.."
folder=${1:-/tmp/transformers-common-tests}
shift || true
version=$(python -c "import transformers; print(transformers.__version__)")
if [ ! -f "$folder/$version/transformers_tests/test_modeling_common.py" ]; then
    mkdir -p "$folder/$version"
    python -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation "transformers==$version" \
        -d "$folder/$version"
    tar xzf "$folder/$version/transformers-$version.tar.gz" -C "$folder/$version" "transformers-$version/tests"
    rm -rf "$folder/$version/transformers_tests"
    mv "$folder/$version/transformers-$version/tests" "$folder/$version/transformers_tests"
    package="$folder/$version/transformers_tests"
    touch "$package/__init__.py"
    for stub in exporters/test_export.py:ExportTesterMixin generation/test_utils.py:GenerationTesterMixin; do
        file=${stub%%:*}
        if [ ! -f "$package/$file" ]; then
            mkdir -p "$package/$(dirname "$file")" && touch "$package/$(dirname "$file")/__init__.py"
            printf 'class %s:\n    """Stand-in: not in the release archive."""\n' "${stub##*:}" > "$package/$file"
        fi
    done
    python -m pip install --quiet --target "$folder/$version/site" parameterized
fi
TRANSFORMERS_TESTS="$folder/$version" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    python -m pytest tests/test_transformers_common.py -p no:cacheprovider -q "$@"
