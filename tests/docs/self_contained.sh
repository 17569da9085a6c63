#!/bin/sh
# docs.self_contained: no reference to a design file or a shared directory
# outside the repository anywhere in it (issue 14's acceptance check, over
# README.md docs/ apps/ actors/ libsandbox/, widened to every tracked
# directory). Usage: self_contained.sh SOURCE_DIR
cd "$1" || exit 2
if grep -rn "shared/\|DESIGN.md" README.md CONTRIBUTING.md Makefile \
     CMakeLists.txt docs/ apps/ actors/ libsandbox/ scripts/ cmake/ \
     benchmarks/ tests/ .ci/ \
     | grep -v "^tests/docs/self_contained.sh:"; then
  echo "FAIL: the lines above point outside the repository" >&2
  exit 1
fi
echo "ok: the repository stands alone"
