#!/usr/bin/env bash
# The tour: seed 000 through measure, attribute, fix, predict and prove (the README's main
# job). See examples/seeds/000/README.md for what it shows; the other seeds have their own
# examples/seeds/NNN/run.sh.
exec bash "$(dirname "$0")/seeds/000/run.sh" "$@"
