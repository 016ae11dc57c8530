#!/usr/bin/env bash
# Installs aobj from a build directory into a temporary prefix and builds the out-of-tree
# examples against it, as a product would: find_package(aobj) and pkg-config. Then runs the
# store test kit against the example's own store and embed-client against embed-server on
# 127.0.0.1 (UCX_NET_DEVICES=lo). Used by the ctest `embed_examples`.
#   bash scripts/embed_test.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1"); src=$(realpath "$2"); work=$3
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
rm -rf "$work" && mkdir -p "$work" && work=$(realpath "$work")
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "== installed into $prefix"

# Nothing under include/ may reach into src/ or the generated protobuf headers.
if grep -rn '#include "\(wire\|transport\|control\|session\|store\|server\|client\)/' \
     "$prefix/include/aobj" --include='*.h' | grep -v '^'"$prefix"'/include/aobj/testing/'; then
  echo "FAIL: public headers include private headers"; exit 1
fi
grep -rn 'pb\.h' "$prefix/include" && { echo "FAIL: generated header in the public API"; exit 1; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
for ex in embed-client embed-server; do
  echo "== build examples/$ex against the installed tree"
  cmake -S "$src/examples/$ex" -B "$work/$ex" "${gen[@]}" "${launcher[@]}" \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
  nice cmake --build "$work/$ex" -j 2
done

echo "== pkg-config: embed-client built with \`pkg-config --cflags --libs aobj-client\`"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig
pkg-config --exists --print-errors aobj-client aobj-server
# shellcheck disable=SC2046
nice c++ -std=c++20 -O0 -o "$work/embed-client-pc" "$src/examples/embed-client/main.cc" \
  $(pkg-config --cflags --libs aobj-client)

echo "== store test kit against the example's TinyStore"
"$work/embed-server/tiny_store_test" --gtest_brief=1

echo "== embed-client against embed-server on 127.0.0.1"
export AOBJ_ACCESS_KEY_ID=AKEMBEDEXAMPLE AOBJ_SECRET_ACCESS_KEY=embed-example-secret
"$work/embed-server/embed-server" 127.0.0.1:0 "$work/port" 2>"$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { cat "$work/server.log"; echo "FAIL: embed-server did not start"; exit 1; }
port=$(cat "$work/port")
"$work/embed-client/embed-client" "127.0.0.1:$port" embed
"$work/embed-client-pc" "127.0.0.1:$port" embed
kill -TERM $server
wait $server
trap - EXIT
tail -1 "$work/server.log"
echo "== embed_examples: OK"
