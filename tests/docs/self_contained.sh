#!/bin/sh
# docs.self_contained: no reference to a design file or a shared directory
# outside the repository in the docs or the code (issue 14's acceptance
# check). Usage: self_contained.sh SOURCE_DIR
cd "$1" || exit 2
if grep -rn "shared/\|DESIGN.md" README.md docs/ apps/ actors/ libsandbox/; then
  echo "FAIL: the lines above point outside the repository" >&2
  exit 1
fi
echo "ok: README.md docs/ apps/ actors/ libsandbox/ stand alone"
