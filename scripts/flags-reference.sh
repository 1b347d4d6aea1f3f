#!/usr/bin/env bash
# Writes docs/flags.md's text to stdout: every example program's --help, which the app layer
# generates from the settings' declarations, so the page cannot say what the programs do not.
# Usage: scripts/flags-reference.sh <bin dir>      (a test compares its output with docs/flags.md;
#        regenerate: scripts/flags-reference.sh build/bin > docs/flags.md)
set -euo pipefail
bin=$1
cat <<'HEAD'
# Flags of the example programs

Generated from the programs' setting declarations (`scripts/flags-reference.sh build/bin >
docs/flags.md`; the `docs/flags_reference` test fails when this page and the programs differ).
Every program also reads its settings from `--config FILE` and the environment variable
`TENAX_ARGS`; `--print-config` shows each value and where it came from.
HEAD
for program in heat2d gray_scott poisson train_mlp train_gpt heat_equation tutorial_cooling tutorial_fit \
  tutorial_membrane tutorial_model; do
  printf '\n## %s\n\n```text\n' "$program"
  "$bin/$program" --help
  printf '```\n'
done
