#!/usr/bin/env bash
# The package.* tests (tests/package/CMakeLists.txt). Every scratch file is
# under WORK (in ctest's binary directory), emptied first.
#   check.sh install  BUILD WORK          cmake --install into WORK/stage
#   check.sh consumer MODE SOURCE WORK [STAGE]
#                                         build and run tests/package/consumer
#   check.sh deb      BUILD WORK          cpack's .deb: contents, control,
#                                         extracted and run
set -euo pipefail

fail() { echo "check.sh: $*" >&2; exit 1; }
fresh() { rm -rf "$1" && mkdir -p "$1"; }

# The consumer is configured with the compiler (and launcher, e.g. ccache)
# of the build under test, without optimisation or debug information
# (fast to compile), and built with CMAKE_BUILD_PARALLEL_LEVEL jobs.
configure_args=()
[ -n "${SANDBOX_TEST_CXX:-}" ] &&
  configure_args+=("-DCMAKE_CXX_COMPILER=$SANDBOX_TEST_CXX")
[ -n "${SANDBOX_TEST_LAUNCHER:-}" ] &&
  configure_args+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$SANDBOX_TEST_LAUNCHER")
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
# ccache: paths relative to the source tree, so that the add_subdirectory
# and FetchContent builds (same depth, same layout) share compilations.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "$0")/../.." && pwd)}"

case "${1:-}" in
install)
  build=$2 work=$3
  fresh "$work"
  cmake --install "$build" --prefix "$work/stage" >"$work/install.log"
  for f in bin/sandbox lib/libsandbox.a lib/libsandbox_actors.a \
           include/sandbox/errc.hpp include/sandbox/client/blocking_session.hpp \
           lib/cmake/sandbox/sandboxConfig.cmake \
           lib/cmake/sandbox/sandboxConfigVersion.cmake \
           lib/cmake/sandbox/sandboxTargets.cmake \
           lib/cmake/sandbox/FindCAF.cmake lib/pkgconfig/sandbox.pc \
           share/man/man1/sandbox.1 share/doc/sandbox/LICENSE; do
    [ -e "$work/stage/$f" ] || fail "install: $f is missing"
  done
  # The installed CMake files name no path of the build or source tree.
  if grep -rl "$build\|$(cd "$(dirname "$0")/../.." && pwd)" \
       "$work/stage/lib/cmake" "$work/stage/lib/pkgconfig"; then
    fail "install: the files above name the build or source tree"
  fi
  echo "install: ok"
  ;;
consumer)
  mode=$2 source=$3 work=$4 stage=${5:-}
  fresh "$work"
  args=(-S "$source/tests/package/consumer" -B "$work/build"
        -DCMAKE_BUILD_TYPE= "-DSANDBOX_CONSUME=$mode"
        "-DSANDBOX_SOURCE_DIR=$source" "${configure_args[@]}")
  # Only the staged install may satisfy find_package(sandbox).
  [ "$mode" = package ] && args+=("-DCMAKE_PREFIX_PATH=$stage"
                                  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  cmake "${args[@]}" >"$work/configure.log" ||
    { cat "$work/configure.log"; fail "$mode: configure failed"; }
  # Only the consumer and what it links, not the CLI or the tests.
  cmake --build "$work/build" --target consumer >"$work/build.log" 2>&1 ||
    { tail -50 "$work/build.log"; fail "$mode: build failed"; }
  for t in sandbox_cli sandbox-test-cli; do
    if grep -q "Built target $t\$" "$work/build.log"; then
      fail "$mode: built $t, which the consumer does not need"
    fi
  done
  out=$(cd "$work" && ./build/consumer)
  grep -qx hi <<<"$out" || fail "$mode: the consumer printed '$out', not 'hi'"
  if [ "$mode" = package ]; then
    # sandbox.pc: its flags find the installed headers, its libraries link
    # the consumer's object file into a program that works too.
    export PKG_CONFIG_PATH="$stage/lib/pkgconfig"
    cxx=${SANDBOX_TEST_CXX:-c++}
    # shellcheck disable=SC2046
    "$cxx" -E $(pkg-config --cflags sandbox) \
      "$source/tests/package/consumer/main.cpp" >/dev/null ||
      fail "pkg-config: the headers are not found with --cflags"
    obj=$(find "$work/build" -name 'main.cpp.o' | head -1)
    # shellcheck disable=SC2046
    "$cxx" -o "$work/consumer-pc" "$obj" $(pkg-config --libs sandbox) ||
      fail "pkg-config: the consumer does not link with --libs"
    out=$(cd "$work" && ./consumer-pc)
    grep -qx hi <<<"$out" || fail "pkg-config: the consumer printed '$out'"
    [ "$(pkg-config --modversion sandbox)" = "${SANDBOX_TEST_VERSION:?}" ] ||
      fail "pkg-config: version $(pkg-config --modversion sandbox)"
  fi
  echo "$mode: ok"
  ;;
deb)
  build=$2 work=$3
  fresh "$work"
  # What `make package` runs, with the package written under WORK.
  (cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log") ||
    { cat "$work/cpack.log"; fail "deb: cpack failed"; }
  shopt -s nullglob
  debs=("$work"/out/*.deb)
  [ "${#debs[@]}" -eq 1 ] || fail "deb: expected one .deb, got ${debs[*]}"
  deb=${debs[0]}
  version=${SANDBOX_TEST_VERSION:?}
  dpkg-deb -I "$deb" >"$work/info.txt"
  field() { dpkg-deb -f "$deb" "$1"; }
  [ "$(field Package)" = sandbox ] || fail "deb: Package: $(field Package)"
  [ "$(field Version)" = "$version" ] || fail "deb: Version: $(field Version)"
  depends=$(field Depends)
  for p in libc6 libstdc++6 libcaf-core0.17 libcaf-io0.17 \
           libcaf-openssl0.17 libspdlog1.10 libfmt9; do
    grep -q "\\b$p\\b" <<<"$depends" || fail "deb: Depends lacks $p: $depends"
  done
  # Every package named in Depends and Recommends exists in Debian 12
  # (they are installed here: the build needed them).
  for p in $(echo "$depends, $(field Recommends)" |
             tr ',|' '\n\n' | sed 's/(.*)//; s/:any//' | tr -d ' ' | sort -u); do
    [ "$p" = libboost-dev ] && continue # an alternative, 1.74 in Debian 12
    dpkg-query -W "$p" >/dev/null 2>&1 || fail "deb: no package $p here"
  done
  dpkg-deb -c "$deb" | awk '{print $NF}' >"$work/contents.txt"
  for f in ./usr/bin/sandbox ./usr/share/man/man1/sandbox.1 \
           ./usr/lib/libsandbox.a ./usr/lib/libsandbox_actors.a \
           ./usr/include/sandbox/client/blocking_session.hpp \
           ./usr/lib/cmake/sandbox/sandboxConfig.cmake \
           ./usr/lib/cmake/sandbox/sandboxTargets.cmake \
           ./usr/lib/cmake/sandbox/FindCAF.cmake \
           ./usr/lib/pkgconfig/sandbox.pc ./usr/share/doc/sandbox/LICENSE; do
    grep -qx -- "$f" "$work/contents.txt" || fail "deb: $f is missing"
  done
  root="$work/root"
  dpkg-deb -x "$deb" "$root"
  # The libraries are static: the CLI needs only the Depends above.
  out=$("$root/usr/bin/sandbox" --version)
  [ "$out" = "sandbox $version" ] || fail "deb: --version printed '$out'"
  out=$(cd "$work" && "$root/usr/bin/sandbox" run -- echo hi)
  [ "$out" = hi ] || fail "deb: sandbox run printed '$out'"
  grep -q '^\.TH SANDBOX "1"' "$root/usr/share/man/man1/sandbox.1" ||
    fail "deb: the man page has no .TH SANDBOX 1 header"
  grep -q "sandbox $version" "$root/usr/share/man/man1/sandbox.1" ||
    fail "deb: the man page does not name version $version"
  grep -q 'json' "$root/usr/share/man/man1/sandbox.1" ||
    fail "deb: the man page lacks the CLI's options"
  [ "$(PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" \
       pkg-config --variable=includedir sandbox)" ] ||
    fail "deb: sandbox.pc names no includedir"
  inc=$(PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" \
        pkg-config --variable=includedir sandbox)
  [ -e "$inc/sandbox/client/blocking_session.hpp" ] ||
    fail "deb: sandbox.pc's includedir $inc has no headers"
  echo "deb: ok ($(basename "$deb"), $(du -h "$deb" | cut -f1))"
  ;;
*)
  fail "usage: check.sh install|consumer|deb ..."
  ;;
esac
