#!/bin/sh
# docs.format: every C++ source of the tree is as .clang-format lays it out
# (the style CONTRIBUTING.md describes). Usage: format.sh CLANG_FORMAT SOURCE_DIR
# To fix what it lists: clang-format -i <file> (the same clang-format).
format="$1"
cd "$2" || exit 2
bad=$(find libsandbox actors apps benchmarks tests \
        \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -type f \
        -not -path '*/node_modules/*' | sort | while read -r f; do
  "$format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
  echo "$bad"
  echo "FAIL: the files above are not formatted ($format -i FILE)" >&2
  exit 1
fi
echo "ok: every source file is formatted"
