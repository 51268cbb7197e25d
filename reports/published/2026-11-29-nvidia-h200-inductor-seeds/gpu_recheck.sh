# After gpu_rows.sh: the two rows changed since (mutation_rename under the seed's config
# patches; zero_grid no longer expected to fail on inductor-max-autotune:TRITON); then where the
# dynamic persistent-TMA illegal-alignment items' wrong values (2026-11-29's seed-ports call 3)
# come from: on an empty cache they raise as the seed expects (gpu_rows.sh), so here (1) after
# an aligned dynamic sibling that compiles the same graph, and (2) the two seed files whole on
# default inductor with 16 workers, as that call ran them, on an empty cache.
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
work=/tmp/recheck2 && rm -rf $work && mkdir -p $work
source reports/published/2026-11-29-nvidia-h200-inductor-seeds/lib.sh
seeds=suites/seeds/max_autotune.yaml
run changed changed 150 $seeds suites/seeds/aot_inductor.yaml -n 4 \
  -k "mutation_rename_fusion_ir or zero_grid" --backend inductor-max-autotune,inductor-max-autotune:TRITON
for backend in inductor inductor-max-autotune:TRITON; do
  tag=${backend//[:]/-}
  run "after-aligned-$tag" "after-aligned-$tag" 90 "$seeds::mm_persistent_tma[nn-dynamic@$backend]" \
    "$seeds::mm_persistent_tma_illegal_alignment[dynamic@$backend]" \
    "$seeds::addmm_persistent_tma_illegal_alignment[dynamic@$backend]" --backend "$backend" -p no:xdist
done
BRIEF=1 run seed-files seed-files 170 $seeds suites/seeds/cutlass_backend.yaml --backend inductor -n 16
tar czf "$OUT/recheck.tar.gz" -C $work --exclude 'cache-*' .
