# Sourced by the sampler study scripts (train_study_models.sh, run_budget_study.sh,
# run_sampler_study.sh): reads OUT_DIR [ZAPGRAM_BINARY] and sets repo, out,
# zapgram, data (ZAPGRAM_DATA_DIR, default ../shared/data next to the repo)
# and tokenizer (Llama 3); creates OUT_DIR.
if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUT_DIR [ZAPGRAM_BINARY]" >&2
  exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$1
zapgram=${2:-$repo/build/zapgram}
data=${ZAPGRAM_DATA_DIR:-$repo/../shared/data}
tokenizer=$data/tokenizers/llama3.tokenizer.json
mkdir -p "$out"
