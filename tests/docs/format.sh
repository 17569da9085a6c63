#!/bin/sh
# docs.format: every C++ source of the tree is as .clang-format lays it out
# (the style CONTRIBUTING.md describes). Usage: format.sh CLANG_FORMAT SOURCE_DIR
# To fix what it lists: clang-format -i <file> (the same clang-format).
# One clang-format process checks every file (it reports each file that
# differs and goes on to the next).
format="$1"
cd "$2" || exit 2
files=$(find libsandbox actors apps benchmarks tests \
          \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) -type f \
          -not -path '*/node_modules/*' | sort)
[ -n "$files" ] || { echo "FAIL: no source found below $2" >&2; exit 2; }
# shellcheck disable=SC2086 # one word per path (no path has a space)
report=$("$format" --style=file --dry-run -Werror $files 2>&1)
status=$?
bad=$(printf '%s\n' "$report" |
        sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*clang-format-violations.*/\1/p' |
        sort -u)
if [ -n "$bad" ]; then
  echo "$bad"
  echo "FAIL: the files above are not formatted ($format -i FILE)" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  printf '%s\n' "$report" >&2
  echo "FAIL: $format failed (status $status)" >&2
  exit 1
fi
echo "ok: every source file is formatted ($(printf '%s\n' "$files" | wc -l) files)"
