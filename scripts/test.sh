#!/usr/bin/env bash
# The test command (README.md, "Test"; .ci/run runs exactly this): install what the tests need
# on a fresh Debian 12 machine, then run the whole suite. Tests whose tool is missing fail
# loudly rather than skip, so this script is the one place that provides them.
#
#   bash scripts/test.sh                 # install what is missing, cargo test --release --no-fail-fast,
#                                        # then the fleet tests with --features fleet
#   bash scripts/test.sh --test replay   # extra arguments go to cargo test
set -euo pipefail
cd "$(dirname "$0")/.."

# apt packages (gcc, clang, pahole, perf, hackbench, chromium, ...) and a Rust at least as new
# as Cargo.toml's rust-version: scripts/setup.sh lists them and says why each is needed.
. scripts/setup.sh test

# Spark's local mode: Java 17 or newer (Debian 12's openjdk-17-jre-headless where missing) and
# pyspark (pinned) in target/spark-venv.
PYSPARK_VERSION=4.3.0
install_spark() {
    if ! java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then
        local sudo=()
        [ "$(id -u)" -eq 0 ] || sudo=(sudo)
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null || return 1
    fi
    local py=target/spark-venv/bin/python
    if ! "$py" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$PYSPARK_VERSION')" 2>/dev/null; then
        rm -rf target/spark-venv
        python3 -m venv target/spark-venv || return 1
        target/spark-venv/bin/pip install -q "pyspark==$PYSPARK_VERSION" || return 1
    fi
}

# --no-fail-fast: a failing test binary does not hide the results of the ones after it; nor
# does a failing step hide the next: the script fails if any did.
status=0
cargo test --release --no-fail-fast "$@" || status=$?

# The fleet store (--features fleet: Parquet and DataFusion, docs/fleet.md), off in the default
# build: its integration tests and the library's fleet unit tests, built with the feature.
# Skipped when extra arguments pick tests.
if [ $# -eq 0 ]; then
    cargo test --release --no-fail-fast --features fleet --test fleet || status=$?
    cargo test --release --no-fail-fast --features fleet --lib fleet:: || status=$?
    # The same store and SQL on Apache Spark in local mode (tests/fleet_spark.rs): a JRE from
    # Debian's packages and pyspark from PyPI in a virtualenv under target/ (kept between runs;
    # about 40 s to install, 40 s to test). A failed install fails the script.
    spark_installed=yes
    install_spark || { spark_installed=no; status=1; echo "scripts/test.sh: cannot install Spark's local mode (JRE, pyspark)" >&2; }
    if [ "$spark_installed" = yes ]; then
        LINEUP_SPARK_PYTHON="$PWD/target/spark-venv/bin/python" \
            cargo test --release --no-fail-fast --features fleet --test fleet_spark || status=$?
    fi
fi
exit "$status"
