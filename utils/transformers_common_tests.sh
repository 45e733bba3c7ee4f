#!/usr/bin/env bash
# transformers' common model tests on every head of lineage BERT and lineage GPT, through
# tests/test_transformers_common.py: the installed release's tests/test_modeling_common.py (ModelTesterMixin) with
# upstream's generation and export mixins (GenerationTesterMixin, ExportTesterMixin), as transformers runs them on
# its own BERT and OpenAI GPT (about 70 s on 2 idle cores).
#
#   bash utils/transformers_common_tests.sh [FOLDER] [pytest options]
#
# .ci/run runs it after the suite, on the newest releases; README's test command does not. It downloads the installed
# transformers release's source archive from PyPI (its tests/ folder holds the common mixins, not the per-model
# tests), unpacks it into FOLDER (default /tmp/transformers-common-tests; nothing is copied into this repository) as
# the package `transformers_tests`, and installs `parameterized` (the mixins' one extra requirement) there.
#
# The archive lacks tests/generation/test_utils.py and tests/exporters/test_export.py. They are taken, at every run,
# from TRANSFORMERS_MIXINS (default: ../shared/transformers_tests beside this repository, which CI clones; upstream's
# files, see its README), with one line changed: generation's `from tests.exporters...` import names the package
# `transformers_tests`. Without that folder the script stops and says so; TRANSFORMERS_MIXINS=none runs the common
# tests with empty stand-ins for the two mixins instead (no generation or torch.export test then).
set -euo pipefail
mixins=${TRANSFORMERS_MIXINS:-$(dirname "$0")/../../shared/transformers_tests}
[ "$mixins" = none ] || [ ! -d "$mixins" ] || mixins=$(cd "$mixins" && pwd)  # before the cd below
cd "$(dirname "$0")/.."
folder=${1:-/tmp/transformers-common-tests}
shift || true
version=$(python -c "import transformers; print(transformers.__version__)")
package="$folder/$version/transformers_tests"
if [ ! -f "$package/test_modeling_common.py" ]; then
    mkdir -p "$folder/$version"
    python -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation "transformers==$version" \
        -d "$folder/$version"
    tar xzf "$folder/$version/transformers-$version.tar.gz" -C "$folder/$version" "transformers-$version/tests"
    rm -rf "$package"
    mv "$folder/$version/transformers-$version/tests" "$package"
    touch "$package/__init__.py"
    python -m pip install --quiet --target "$folder/$version/site" parameterized
fi
# The two mixins are (re)written at every run, so a folder prepared earlier (or with the stand-ins) gets the files
# named now.
for entry in generation/test_utils.py:GenerationTesterMixin exporters/test_export.py:ExportTesterMixin; do
    file=${entry%%:*}
    mkdir -p "$package/$(dirname "$file")" && touch "$package/$(dirname "$file")/__init__.py"
    if [ "$mixins" = none ]; then
        printf 'class %s:\n    """Stand-in (TRANSFORMERS_MIXINS=none): no test of this mixin runs."""\n' \
            "${entry##*:}" > "$package/$file"
    elif [ -f "$mixins/$file" ]; then
        sed 's/^from tests\./from transformers_tests./' "$mixins/$file" > "$package/$file"
    else
        echo "transformers_common_tests.sh: $mixins/$file not found. It is upstream's $file (not in the release" \
             "archive): point TRANSFORMERS_MIXINS at a folder holding generation/test_utils.py and" \
             "exporters/test_export.py, or set TRANSFORMERS_MIXINS=none to run without the generation and export" \
             "tests." >&2
        exit 1
    fi
done
# The mixins' marks (generate, torch_compile_test, ...) are registered by upstream's conftest.py, not here.
TRANSFORMERS_TESTS="$folder/$version" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    python -m pytest tests/test_transformers_common.py -p no:cacheprovider -q \
    -W ignore::pytest.PytestUnknownMarkWarning "$@"
