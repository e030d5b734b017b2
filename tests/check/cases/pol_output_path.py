# args: --output-path /data/out
# verdict: accept
open("/data/out/results.json", "w").write("{}")
