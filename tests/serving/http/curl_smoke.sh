#!/usr/bin/env bash
# fk serve on a tiny model, driven by curl: health, models, a completion, one with
# logprobs, a streamed completion and an error body. Usage: curl_smoke.sh PATH_TO_FK
set -euo pipefail
FK=${1:?path to fk}
log=$(mktemp)
"$FK" serve tiny-llama --device cpu --port 0 --num-pages 64 --max-num-batched-tokens 128 > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p' "$log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not start:"; cat "$log"; exit 1; }
base=http://127.0.0.1:$port
curl -sf "$base/health" | grep -q ok
curl -sf "$base/v1/models" | python3 -c 'import json,sys; assert json.load(sys.stdin)["data"][0]["id"] == "tiny-llama"'
curl -sf "$base/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": [1, 2, 3], "max_tokens": 4, "ignore_eos": true, "temperature": 0}' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); c=r["choices"][0]; assert len(c["token_ids"]) == 4 and c["finish_reason"] == "length", r'
curl -sf "$base/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": [1, 2, 3], "max_tokens": 3, "ignore_eos": true, "temperature": 0, "logprobs": 2}' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); lp=r["choices"][0]["logprobs"]; assert len(lp["token_logprobs"]) == 3 and all(len(t) <= 2 for t in lp["top_logprobs"]), r'
curl -sfN "$base/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": [1, 2, 3], "max_tokens": 4, "ignore_eos": true, "stream": true}' | grep -q 'data: \[DONE\]'
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/completions" -H 'Content-Type: application/json' -d '{oops')
[ "$code" = 400 ] || { echo "malformed JSON gave HTTP $code"; exit 1; }
echo "curl smoke test passed on port $port"
