#!/usr/bin/env bash
# An outside author's check: gemmconf from a wheel in a fresh venv outside the checkout,
# inductor-max-autotune on CPU bmm items, with the shipped expectations file.
set -u
rm -rf /tmp/outside && mkdir -p /tmp/outside/work && cd /tmp/outside
python3 -m venv venv && . venv/bin/activate
pip install -q --upgrade pip==25.3
start=$(date +%s)
pip wheel -q --no-deps -w wheels /work/main > /dev/null 2>&1
pip install -q torch==2.13.0 triton==3.7.1 wheels/gemmconf-*.whl 2>&1 | tail -2
echo "install: $(($(date +%s) - start)) s"
cd work
gemmconf backends | grep -E "max-autotune"
gemmconf run zero_size epilogue dynamic --backend inductor-max-autotune -k "bmm or matmul_bb" -n 2 2>&1 | tail -4
echo "exit ${PIPESTATUS[0]}"
