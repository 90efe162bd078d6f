#!/bin/sh
# Finishes the portable GPU suite once Maven has filled BUNDLE_DIR/lib: links a trimmed JDK
# into BUNDLE_DIR/jdk, adds the run, sanitize, stress, soak, examples and nvtx-check scripts, the C probes and the README, packs
# BUNDLE_DIR.tar.xz and fails when the archive is larger than MAX_BYTES. Called by the gpu-bundle profile of
# src-test-gpu/pom.xml; the arguments come from its properties.
#
#   assemble.sh JAVA_HOME BUNDLE_DIR JDK_MODULES MAX_BYTES CLI_JAR
set -eu

if [ "$#" -ne 5 ]; then
    echo "usage: $0 JAVA_HOME BUNDLE_DIR JDK_MODULES MAX_BYTES CLI_JAR" >&2
    exit 64
fi
java_home=$1
bundle=$2
modules=$3
max_bytes=$4
cli_jar=$5
here=$(cd "$(dirname "$0")" && pwd)
module_dir=$(dirname "$(dirname "$here")")

# jlink refuses to write into an existing directory.
rm -rf "$bundle/jdk"
# zip-0: jlink's own compression (zip-9) leaves lib/modules incompressible to xz. Stored
# uncompressed, xz packs the JDK into about 15 MB instead of 23 MB; unpacked it is 67 MB
# instead of 47 MB, and classes load without inflating.
"$java_home/bin/jlink" \
    --add-modules "$modules" \
    --strip-debug --no-header-files --no-man-pages --compress zip-0 \
    --output "$bundle/jdk"

# install sets the modes explicitly: tar keeps them, and the GPU host needs run executable.
install -m 0755 "$here/run" "$bundle/run"
install -m 0755 "$here/sanitize" "$bundle/sanitize"
install -m 0755 "$here/stress" "$bundle/stress"
install -m 0755 "$here/soak" "$bundle/soak"
install -m 0755 "$here/examples" "$bundle/examples"
install -m 0755 "$here/nvtx-check" "$bundle/nvtx-check"
install -m 0644 "$module_dir/README.md" "$bundle/README.md"
# The CLI is a shaded jar holding gatun-core too: it stays out of lib/, which is the
# suite's class path. Run it as: jdk/bin/java -jar gatun.jar doctor | bench ...
install -m 0644 "$cli_jar" "$bundle/gatun.jar"
# The JMH example (examples/kernel-benchmark): a user's kernel benchmarked; its own runnable jar.
install -m 0644 "$(dirname "$module_dir")/examples/kernel-benchmark/target/benchmarks.jar" "$bundle/kernel-benchmark.jar"
# The C comparison (runtime-bench/README.md): ./compare builds the C twin and the PTX from bench/.
bench=$(dirname "$module_dir")/runtime-bench/src
install -m 0755 "$bench/bench/compare" "$bundle/compare"
install -m 0755 "$bench/bench/profile" "$bundle/profile"
install -d "$bundle/bench"
install -m 0644 "$bench/c/twins.c" "$bench/c/twins.cu" "$bundle/bench/"
# Probes of driver and tool behaviour in plain C, each with the script that builds and runs it.
install -d "$bundle/probes"
install -m 0644 "$here/probes/initcheck_graph_alloc.c" "$here/probes/initcheck_graph_alloc.cu" "$bundle/probes/"
install -m 0755 "$here/probes/initcheck-graph-alloc" "$bundle/probes/"
install -m 0644 "$here/probes/gpu_coredump.cu" "$bundle/probes/"
install -m 0755 "$here/probes/gpu-coredump" "$bundle/probes/"
install -m 0644 "$here/probes/async_api.cu" "$bundle/probes/"
install -m 0755 "$here/probes/async-api" "$bundle/probes/"
install -m 0644 "$here/probes/initcheck_alloc_async.c" "$bundle/probes/"
install -m 0755 "$here/probes/initcheck-alloc-async" "$bundle/probes/"
install -m 0644 "$here/probes/blas_gemm.c" "$bundle/probes/"
install -m 0755 "$here/probes/blas-gemm" "$bundle/probes/"
install -m 0644 "$here/probes/cudnn_sdpa.c" "$bundle/probes/"
install -m 0755 "$here/probes/cudnn-sdpa" "$bundle/probes/"
# The commit the bundle was built from, which compare reports beside its results.
git -C "$module_dir" describe --always --dirty >"$bundle/COMMIT" 2>/dev/null || echo unknown >"$bundle/COMMIT"

# Fixed owner and order, so the archive does not depend on who built it or on readdir order.
archive="$bundle.tar.xz"
rm -f "$archive"
XZ_OPT=-9 tar -C "$(dirname "$bundle")" --owner=0 --group=0 --numeric-owner --sort=name \
    -cJf "$archive" "$(basename "$bundle")"

bytes=$(wc -c < "$archive" | tr -d ' ')
echo "GPU suite bundle: $archive, $bytes bytes ($(du -h --apparent-size "$archive" | cut -f1)); JDK modules: $(
    "$bundle/jdk/bin/java" --list-modules | sed 's/@.*//' | tr '\n' ' ')"
if [ "$bytes" -gt "$max_bytes" ]; then
    echo "GPU suite bundle is $bytes bytes, over the limit of $max_bytes bytes" >&2
    exit 1
fi
