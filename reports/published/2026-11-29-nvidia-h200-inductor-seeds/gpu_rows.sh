# Seed rows 115, 75 and 97 on the backends their seeds test (issue 40: their FileChecks had not
# run on a GPU), then whether the verdict of the dynamic persistent-TMA illegal-alignment seeds
# depends on inductor's cache: each item alone with an empty TORCHINDUCTOR_CACHE_DIR, the same
# again on the cache it left, and on an empty one after the static cases (which raise).
source reports/published/2026-11-29-nvidia-h200-inductor-seed-ports/setup.sh
work=/tmp/rows && rm -rf $work && mkdir -p $work
source reports/published/2026-11-29-nvidia-h200-inductor-seeds/lib.sh
rows="suites/seeds/aot_inductor.yaml suites/seeds/max_autotune.yaml"
run rows rows "${ROWS_LIMIT:-240}" $rows -n 8 -k "simple or zero_grid or mutation_rename" \
  --backend reference,inductor,inductor-max-autotune,inductor-max-autotune:TRITON
for backend in inductor-max-autotune:TRITON inductor; do
  tag=${backend//[:]/-}
  ids=()
  for op in mm addmm; do
    ids+=("suites/seeds/max_autotune.yaml::${op}_persistent_tma_illegal_alignment[dynamic@$backend]")
  done
  run "alone-$tag" "alone-$tag" 60 "${ids[@]}" --backend "$backend" -p no:xdist
  run "again-$tag" "alone-$tag" 45 "${ids[@]}" --backend "$backend" -p no:xdist
  run "siblings-$tag" "siblings-$tag" 60 suites/seeds/max_autotune.yaml -k illegal_alignment \
    --backend "$backend" -p no:xdist
done
tar czf "$OUT/rows.tar.gz" -C $work --exclude 'cache-*' .
