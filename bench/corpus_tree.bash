# Sourced by the convert figure scripts: hard_linked_tree SHARED DIR makes an ImageFolder of the
# corpus's 800 files linked 25 times each (20,000 files, 740 MB, no bytes copied).
hard_linked_tree() {
  local shared=$1 dir=$2 c k f
  for c in "$shared"/corpus/imagenet_like/*/; do
    c=$(basename "$c")
    mkdir -p "$dir/$c"
    for k in $(seq -w 0 24); do
      for f in "$shared/corpus/imagenet_like/$c"/*; do ln "$f" "$dir/$c/${k}_$(basename "$f")"; done
    done
  done
}
