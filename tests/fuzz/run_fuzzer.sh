#!/usr/bin/env bash
# Fuzzes one libFuzzer target for a while (the fuzz.<target>.run tests):
#   run_fuzzer.sh BINARY SECONDS FUZZ_SOURCE_DIR TARGET WORK_DIR
# New inputs go to WORK_DIR/corpus, never into the source tree; the checked-in
# corpus is read as seeds. A crash leaves WORK_DIR/crash-* and fails the test:
# copy it into tests/fuzz/corpus/TARGET/ once fixed, as a regression input.
set -euo pipefail
binary="$1" seconds="$2" src="$3" target="$4" work="$5"
mkdir -p "$work/corpus"
args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -artifact_prefix="$work/")
[[ -f "$src/$target.dict" ]] && args+=(-dict="$src/$target.dict")
exec "$binary" "${args[@]}" "$work/corpus" "$src/corpus/$target"
