#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-19 + libFuzzer, ASan + UBSan;
# build-fuzz/) and runs them.
#
#   scripts/fuzz.sh [--seconds N] [--seeds N] [--max-bytes B] [--timeout S] [--jobs J] [TARGET...]
#     A campaign: each target replays its corpus (build-fuzz/corpus/<target>,
#     kept between runs, plus the generated seeds and fuzz/seeds/<target>),
#     then fuzzes for N seconds (default 600) with J workers (default 1),
#     adding what it finds to its corpus. Crashes go to build-fuzz/artifacts/.
#   scripts/fuzz.sh --ci
#     What CI runs (scripts/test.sh): a small seed set (--seeds 60, inputs up
#     to 4 KiB) replayed, then a 20-second campaign per target from a scratch
#     corpus; any crash, hang (one input over --timeout, 30 s), leak or
#     sanitizer report fails.
#
# Seeds come from the shared data (scripts/fuzz_seeds.py; nothing is copied
# into the repository); --seeds N keeps N per target (0: all, the default
# outside CI). Per target the summary prints executions, coverage (cov:
# edges, ft: features) and the corpus size, also written to
# build-fuzz/fuzz-summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600 seeds=0 jobs=1 ci=0 max_bytes=16384 timeout=30
targets=()
while (($#)); do
  case "$1" in
    --ci) ci=1 seconds=20 seeds=60 max_bytes=4096 ;;
    --max-bytes) max_bytes=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
all=(gbnf_reader_fuzzer lark_reader_fuzzer regex_compiler_fuzzer json_schema_fuzzer
     vocabulary_fuzzer matcher_fuzzer compiled_grammar_fuzzer)
((${#targets[@]})) || targets=("${all[@]}")
data=${ZAPGRAM_DATA_DIR:-$(cd .. && pwd)/shared/data}
out=build-fuzz

CC=clang-19 CXX=clang++-19 cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 \
  -DZAPGRAM_FUZZ=ON -DZAPGRAM_DATA_DIR="$data" >/dev/null
cmake --build "$out" -j "${JOBS:-2}" --target "${targets[@]}"
/usr/bin/python3 scripts/fuzz_seeds.py --data "$data" --out "$out/seeds" --max "$seeds" \
  --max-bytes "$max_bytes" >/dev/null

mkdir -p "$out/artifacts"
summary=$out/fuzz-summary.txt
: >"$summary"
# Leaks: libFuzzer's own check (-detect_leaks=1) on every input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
[[ -x /usr/lib/llvm-19/bin/llvm-symbolizer ]] && export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
flags=(-timeout="$timeout" -rss_limit_mb=2560 -malloc_limit_mb=2048
       -print_final_stats=1 -artifact_prefix="$out/artifacts/")
for t in "${targets[@]}"; do
  bin=$out/$t
  if ((ci)); then
    corpus=$(mktemp -d)
  else
    corpus=$out/corpus/$t
    mkdir -p "$corpus"
  fi
  log=$out/$t.log
  # tokenizer.json seeds are tens of KiB (cut-down real tokenizers).
  len=$max_bytes
  [[ $t == vocabulary_fuzzer ]] && len=131072
  tflags=("${flags[@]}" -max_len="$len")
  # Replay: every corpus and seed input once (-runs=0), then the campaign.
  "$bin" "${tflags[@]}" -runs=0 "$corpus" "$out/seeds/$t" "fuzz/seeds/$t" >"$log.replay" 2>&1 ||
    { tail -n 40 "$log.replay"; echo "fuzz: $t failed on its corpus (log $log.replay)" >&2; exit 1; }
  start=$(date +%s)
  if ((jobs > 1)); then
    "$bin" "${tflags[@]}" -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" \
      "$corpus" "$out/seeds/$t" "fuzz/seeds/$t" >"$log" 2>&1 || status=$?
    cat fuzz-*.log >>"$log" 2>/dev/null && rm -f fuzz-*.log
  else
    "$bin" "${tflags[@]}" -max_total_time="$seconds" \
      "$corpus" "$out/seeds/$t" "fuzz/seeds/$t" >"$log" 2>&1 || status=$?
  fi
  if [[ ${status:-0} != 0 ]]; then
    tail -n 60 "$log"
    echo "fuzz: $t found a failure (log $log, input in $out/artifacts/)" >&2
    exit 1
  fi
  execs=$(grep -o 'number_of_executed_units: [0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-22s %4ss  execs %9s  cov %6s  ft %7s  corpus %6s\n' "$t" "$(( $(date +%s) - start ))" \
    "$execs" "${cov:-?}" "${ft:-?}" "${corp:-?}" | tee -a "$summary"
  if ((ci)); then rm -rf "$corpus"; fi
done
