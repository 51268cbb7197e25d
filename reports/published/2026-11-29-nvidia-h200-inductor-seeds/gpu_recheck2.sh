# After gpu_recheck.sh: mutation_rename's value items under the seed's config patches on the
# max-autotune backends (the fusion-IR item raised StopIteration on the TRITON-only adapter),
# and mm_persistent_tma_illegal_output_alignment[static] (AssertionError "No extern kernel
# detected" in gpu_recheck.sh's whole-file run, where the seed expects NoValidChoicesError):
# alone on an empty cache, and after its aligned static sibling on another.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
work=/tmp/recheck3 && rm -rf $work && mkdir -p $work
source reports/published/2026-11-29-nvidia-h200-inductor-seeds/lib.sh
seeds=suites/seeds/max_autotune.yaml
run mutation mutation 100 $seeds -n 4 -k "mutation_rename" \
  --backend inductor-max-autotune,inductor-max-autotune:TRITON
item="$seeds::mm_persistent_tma_illegal_output_alignment[static@inductor]"
run output-alone output-alone 45 "$item" --backend inductor -p no:xdist
run output-after output-after 60 "$seeds::mm_persistent_tma_store[nn-static@inductor]" "$item" \
  --backend inductor -p no:xdist
tar czf "$OUT/recheck2.tar.gz" -C $work --exclude 'cache-*' .
