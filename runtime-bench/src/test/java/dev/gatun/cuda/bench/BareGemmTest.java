package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GEMM rows' bare twin without a GPU. Its libraries are opened in order, and a missing one is
 * named. Its whole run (set-up, batches, product check, tear-down) is driven through the
 * same-process runner, in a JVM of its own, against stand-ins built here with gcc: a driver whose
 * "device" memory is host memory, and a cuBLASLt and a cuBLAS that refuse any argument twins.c
 * would not pass (types, sizes, alpha and beta, the workspace, the algorithm the heuristic
 * returned, the stream bound before the workspace) and write D = 64.0 only where A and B are 1.0.
 * So every downcall's prototype, every argument and the order of the set-up are checked here,
 * before a GPU run can waste its time on them; what the stand-ins cannot check is the timing.
 */
class BareGemmTest {

    /** What the stand-ins share: the sizes, the refusal, and the product a GEMM of the row writes. */
    private static final String COMMON = """
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #define BAD 7 /* CUBLAS_STATUS_INVALID_VALUE */
            #define SIZE 64
            #define WORKSPACE (32UL << 20)
            static int inputs_checked;
            /* D = A B for A and B all fp16 1.0: every element 64.0; anything else is refused. */
            static int product(const uint16_t *a, const uint16_t *b, uint16_t *d) {
                if (!inputs_checked) {
                    for (int i = 0; i < SIZE * SIZE; i++) {
                        if (a[i] != 0x3c00 || b[i] != 0x3c00) return BAD;
                    }
                    inputs_checked = 1;
                }
                if (getenv("FAKE_GEMM_SKIP_WRITE") == NULL) {
                    for (int i = 0; i < SIZE * SIZE; i++) d[i] = 0x5400;
                }
                return 0;
            }
            """;

    private static final String DRIVER = """
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            typedef unsigned long long ptr;
            static long live, live_modules, live_pools, fills32, allocs, async_allocs, pool_allocs, threshold_set;
            static char module_handle, pool_handle;
            int cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
            int cuDevicePrimaryCtxRetain(void **c, int device) { *c = (void *) 0x1000; return device == 0 ? 0 : 101; }
            int cuDevicePrimaryCtxRelease_v2(int device) { return 0; }
            int cuCtxSetCurrent(void *c) { return c == (void *) 0x1000 ? 0 : 201; }
            int cuStreamCreate(void **s, unsigned flags) { *s = malloc(1); fills32 = allocs = async_allocs = pool_allocs = 0; return 0; }
            int cuStreamDestroy_v2(void *s) {
                free(s);
                fprintf(stderr, "FAKE cuStreamDestroy live_allocations=%ld live_modules=%ld live_pools=%ld fills32=%ld "
                        "allocs=%ld async=%ld pooled=%ld\\n", live, live_modules, live_pools, fills32, allocs, async_allocs,
                        pool_allocs);
                return 0;
            }
            /* twins.c's set-up: the PTX the runner was given, its two kernels, in and out filled. */
            int cuModuleLoadData(void **m, const char *image) {
                if (strncmp(image, ".version", 8) != 0) return 200; /* CUDA_ERROR_INVALID_IMAGE */
                *m = &module_handle; live_modules++; return 0;
            }
            int cuModuleGetFunction(void **f, void *m, const char *name) {
                if (m != &module_handle || live_modules == 0) return 400;
                if (strcmp(name, "empty") != 0 && strcmp(name, "four") != 0) return 500; /* CUDA_ERROR_NOT_FOUND */
                *f = m; return 0;
            }
            int cuModuleUnload(void *m) { if (m != &module_handle || live_modules == 0) return 400; live_modules--; return 0; }
            int cuMemsetD32Async(ptr p, unsigned v, size_t n, void *s) {
                if (s == NULL || p == 0 || n != 256 || (v != 0x3f800000u && v != 0x7fc00000u)) return 1;
                for (size_t i = 0; i < n; i++) ((uint32_t *) (uintptr_t) p)[i] = v;
                fills32++;
                return 0;
            }
            int cuStreamSynchronize(void *s) { return s != NULL ? 0 : 400; }
            int cuEventCreate(void **e, unsigned flags) { *e = malloc(1); return 0; }
            int cuEventDestroy_v2(void *e) { free(e); return 0; }
            int cuEventRecord(void *e, void *s) { return 0; }
            int cuEventQuery(void *e) { return 0; }
            static int stream_ordered(ptr *p, size_t n, void *s) {
                if (s == NULL || n != 1048576) return 1;
                *p = (ptr) (uintptr_t) malloc(n); live++; return 0;
            }
            int cuMemAllocAsync(ptr *p, size_t n, void *s) { async_allocs++; return stream_ordered(p, n, s); }
            int cuMemFreeAsync(ptr p, void *s) { if (s == NULL) return 1; free((void *) (uintptr_t) p); live--; return 0; }
            /* twins.c's set_up_pool: pinned device memory on device 0 (allocType, handleTypes, location.type, .id). */
            int cuMemPoolCreate(void **pool, const int *props) {
                if (props[0] != 1 || props[1] != 0 || props[2] != 1 || props[3] != 0) return 1;
                *pool = &pool_handle; live_pools++; threshold_set = 0; return 0;
            }
            int cuMemPoolSetAttribute(void *pool, int attribute, const uint64_t *value) {
                /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, all of it kept */
                if (pool != &pool_handle || attribute != 4 || *value != UINT64_MAX) return 1;
                threshold_set = 1; return 0;
            }
            int cuMemAllocFromPoolAsync(ptr *p, size_t n, void *pool, void *s) {
                if (pool != &pool_handle || !threshold_set || live_pools == 0) return 1;
                pool_allocs++;
                return stream_ordered(p, n, s);
            }
            int cuMemPoolDestroy(void *pool) { if (pool != &pool_handle || live_pools == 0) return 400; live_pools--; return 0; }
            int cuMemAlloc_v2(ptr *p, size_t n) { *p = (ptr) (uintptr_t) malloc(n); live++; allocs++; return 0; }
            int cuMemFree_v2(ptr p) { free((void *) (uintptr_t) p); live--; return 0; }
            int cuMemsetD16Async(ptr p, unsigned short v, size_t n, void *s) {
                if (s == NULL) return 400;
                for (size_t i = 0; i < n; i++) ((uint16_t *) (uintptr_t) p)[i] = v;
                return 0;
            }
            int cuMemcpyDtoH_v2(void *host, ptr p, size_t n) { memcpy(host, (void *) (uintptr_t) p, n); return 0; }
            """;

    private static final String LT = COMMON + """
            typedef struct { uint64_t data[8]; } algo_t;
            typedef struct { algo_t algo; size_t workspaceSize; int state; float wavesCount; int reserved[4]; } result_t;
            static long descs, layouts, preferences, matmuls;
            const char *cublasLtGetStatusName(int status) { return "CUBLAS_STATUS_FAKE"; }
            int cublasLtCreate(void **h) { *h = malloc(1); matmuls = 0; inputs_checked = 0; return 0; }
            int cublasLtDestroy(void *h) {
                free(h);
                fprintf(stderr, "FAKE cublasLtDestroy matmuls=%ld descs=%ld layouts=%ld preferences=%ld\\n", matmuls,
                        descs, layouts, preferences);
                return 0;
            }
            int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
                if (compute != 68 || scale != 0) return BAD; /* CUBLAS_COMPUTE_32F, CUDA_R_32F */
                *d = malloc(1); descs++; return 0;
            }
            int cublasLtMatmulDescDestroy(void *d) { free(d); descs--; return 0; }
            int cublasLtMatmulDescSetAttribute(void *d, int attribute, const void *value, size_t size) {
                if (size != 4) return BAD;
                int32_t v = *(const int32_t *) value;
                /* TRANSA, TRANSB: CUBLAS_OP_N; EPILOGUE: CUBLASLT_EPILOGUE_DEFAULT */
                return ((attribute == 3 || attribute == 4) && v == 0) || (attribute == 7 && v == 1) ? 0 : BAD;
            }
            int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
                if (type != 2 || rows != SIZE || cols != SIZE || ld != SIZE) return BAD; /* CUDA_R_16F */
                *l = malloc(1); layouts++; return 0;
            }
            int cublasLtMatrixLayoutDestroy(void *l) { free(l); layouts--; return 0; }
            int cublasLtMatmulPreferenceCreate(void **p) { *p = malloc(1); preferences++; return 0; }
            int cublasLtMatmulPreferenceDestroy(void *p) { free(p); preferences--; return 0; }
            int cublasLtMatmulPreferenceSetAttribute(void *p, int attribute, const void *value, size_t size) {
                if (attribute == 1) return size == 8 && *(const uint64_t *) value == WORKSPACE ? 0 : BAD;
                if (attribute >= 5 && attribute <= 8) return size == 4 && *(const uint32_t *) value == 16 ? 0 : BAD;
                return BAD;
            }
            int cublasLtMatmulAlgoGetHeuristic(void *h, void *desc, void *a, void *b, void *c, void *d, void *pref,
                    int requested, result_t *results, int *found) {
                if (requested != 1 || c != d || a == b || a == c) return BAD;
                memset(results, 0, sizeof *results);
                results->algo.data[0] = 0x600d;
                *found = 1;
                return 0;
            }
            int cublasLtMatmul(void *h, void *desc, const float *alpha, const void *a, void *al, const void *b, void *bl,
                    const float *beta, const void *c, void *cl, void *d, void *dl, const algo_t *algo, void *workspace,
                    size_t workspace_bytes, void *stream) {
                if (*alpha != 1.0f || *beta != 0.0f || c != d || cl != dl || al == bl || al == dl
                        || algo->data[0] != 0x600d || workspace == NULL || workspace_bytes != WORKSPACE || stream == NULL) {
                    return BAD;
                }
                matmuls++;
                return product(a, b, d);
            }
            """;

    private static final String CUBLAS = COMMON + """
            static long gemms;
            static void *stream, *workspace;
            static size_t workspace_bytes;
            int cublasCreate_v2(void **h) { *h = malloc(1); gemms = 0; stream = workspace = NULL; inputs_checked = 0; return 0; }
            int cublasDestroy_v2(void *h) { free(h); fprintf(stderr, "FAKE cublasDestroy gemms=%ld\\n", gemms); return 0; }
            /* As cuBLAS: binding a stream resets the handle's workspace to its own. */
            int cublasSetStream_v2(void *h, void *s) { stream = s; workspace = NULL; return 0; }
            int cublasSetWorkspace_v2(void *h, void *w, size_t n) { workspace = w; workspace_bytes = n; return 0; }
            int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const void *a, int at,
                    int lda, const void *b, int bt, int ldb, const float *beta, void *c, int ct, int ldc, int compute,
                    int algo) {
                if (stream == NULL || workspace == NULL || workspace_bytes != WORKSPACE || ta != 0 || tb != 0
                        || m != SIZE || n != SIZE || k != SIZE || lda != SIZE || ldb != SIZE || ldc != SIZE
                        || at != 2 || bt != 2 || ct != 2 || compute != 68 || algo != -1 || *alpha != 1.0f
                        || *beta != 0.0f) {
                    return BAD;
                }
                gemms++;
                return product(a, b, c);
            }
            """;

    /** The runner loads the C twin's library whatever twins it runs; this one is never called. */
    private static final String TWINS = "long long gatun_twin_run(const char *id, long n, const char *ptx) { return -1; }\n";

    /** GEMMs per row in the child: not sliced (below SameProcess.SLICED_FROM), a whole number of batches. */
    private static final int N = 20 * TwinRow.BATCH;

    @TempDir
    Path dir;

    @Test
    void cublasIsOpenedOnlyAfterCublasLtAndEachMissingLibraryIsNamed() {
        BareGemm.Libraries noLt = BareGemm.Libraries.open("libgatun-absent-cublasLt.so.13", "libc.so.6");
        assertNull(noLt.lt());
        assertNull(noLt.cublas());
        assertTrue(noLt.missing().startsWith("libgatun-absent-cublasLt.so.13 could not be opened by the dynamic loader ("),
                noLt.missing());
        assertTrue(noLt.missing().endsWith("; libc.so.6, which imports it, was not tried"), noLt.missing());

        BareGemm.Libraries noCublas = BareGemm.Libraries.open("libc.so.6", "libgatun-absent-cublas.so.13");
        assertNull(noCublas.cublas());
        assertTrue(noCublas.missing().startsWith("libgatun-absent-cublas.so.13 could not be opened by the dynamic loader ("),
                noCublas.missing());

        BareGemm.Libraries both = BareGemm.Libraries.open("libc.so.6", "libm.so.6");
        assertNull(both.missing());
        assertNotNull(both.lt());
        assertNotNull(both.cublas());
    }

    @Test
    void theSameProcessRunnerTimesBothGemmRowsBareWithEveryCallAsTwinsCMakesIt() throws Exception {
        Child child = runner(dir, Map.of(), "gemm_lt_64:" + N, "gemm_64:" + N);

        assertEquals(0, child.status(), child.err());
        List<String> twins = child.out().lines().filter(l -> l.startsWith("TWIN ")).toList();
        assertEquals(2, twins.size(), child.out());
        assertTrue(twins.get(0).matches("TWIN bare gemm_lt_64 " + N + " [1-9][0-9]* -"), twins.get(0));
        assertTrue(twins.get(1).matches("TWIN bare gemm_64 " + N + " [1-9][0-9]* -"), twins.get(1));
        List<String> compiled = child.out().lines().filter(l -> l.startsWith("COMPILED ")).toList();
        assertEquals(2, compiled.size(), child.out());
        assertTrue(compiled.get(0).matches("COMPILED bare gemm_lt_64 (yes|no) dev\\.gatun\\.cuda\\.bench\\.BareGemm::matmulLoop: .*"),
                compiled.get(0));
        assertTrue(compiled.get(1).matches("COMPILED bare gemm_64 (yes|no) dev\\.gatun\\.cuda\\.bench\\.BareGemm::gemmLoop: .*"),
                compiled.get(1));

        // Each run's GEMMs, counted by the stand-in at its handle's destruction: the first run of
        // a row in the process warms 200,000 and times N; the later ones (the unreported extra
        // warm-ups while the loop is not C2's code, then the reported run) warm N/2 and time N.
        // Every descriptor, layout and preference was destroyed before the handle.
        List<String> lt = child.err().lines().filter(l -> l.startsWith("FAKE cublasLtDestroy ")).toList();
        List<String> cublas = child.err().lines().filter(l -> l.startsWith("FAKE cublasDestroy ")).toList();
        for (List<String> runs : List.of(lt, cublas)) {
            assertTrue(runs.size() >= 2 && runs.size() <= 2 + SameProcess.EXTRA_WARM_UPS, child.err());
            for (int r = 0; r < runs.size(); r++) {
                int gemms = (r == 0 ? BareTwin.FIRST_WARM_UP : N / 2) + N;
                String counted = runs == lt ? "matmuls=" + gemms + " descs=0 layouts=0 preferences=0" : "gemms=" + gemms;
                assertTrue(runs.get(r).endsWith(" " + counted), runs.get(r) + ", expected " + counted);
            }
        }
        // Every buffer freed before the stream of each run was destroyed.
        List<String> streams = child.err().lines().filter(l -> l.startsWith("FAKE cuStreamDestroy ")).toList();
        assertEquals(lt.size() + cublas.size(), streams.size(), child.err());
        // twins.c's set-up on each: the module loaded (and unloaded before), in and out filled.
        // A, B, D and the workspace beside in and out.
        streams.forEach(l -> assertEquals(
                "FAKE cuStreamDestroy live_allocations=0 live_modules=0 live_pools=0 fills32=2 allocs=6 async=0 pooled=0", l));
    }

    /**
     * The bare twin's loop meets the stream the C twin's loop meets: twins.c's run_row set-up (the
     * module of the runner's PTX, the 4-argument kernel's in and out filled on the stream) before
     * the event, torn down as twins.c tears it down; {@code -Dgatun.bench.bareSetUp=minimal}, the
     * experiment, opens a stream and an event alone.
     */
    @Test
    void theEventRowsBareTwinRunsOnTwinsCsSetUpUnlessTheMinimalOneIsAskedFor() throws Exception {
        for (boolean minimal : new boolean[] {false, true}) {
            Child child = runner(dir.resolve(minimal ? "minimal" : "twins"), Map.of(),
                    minimal ? List.of("-Dgatun.bench.bareSetUp=minimal") : List.of(), "event_record_query:1000");

            assertEquals(0, child.status(), child.err());
            assertTrue(child.out().lines().anyMatch(l -> l.matches("TWIN bare event_record_query 1000 [1-9][0-9]* -")),
                    child.out());
            List<String> streams = child.err().lines().filter(l -> l.startsWith("FAKE cuStreamDestroy ")).toList();
            assertTrue(streams.size() >= 2, child.err()); // the unreported run and the reported one, at least
            String expected = "FAKE cuStreamDestroy live_allocations=0 live_modules=0 live_pools=0 fills32="
                    + (minimal ? "0 allocs=0" : "2 allocs=2") + " async=0 pooled=0";
            streams.forEach(l -> assertEquals(expected, l));
        }
    }

    /**
     * The four rows of two driver calls each run bare on twins.c's set-up of the row: the event
     * row's event, the created-pool row's pool (pinned device memory, every byte kept) from which
     * each allocation comes, and as many allocations as the run's operations (the first run of a
     * row warms {@value BareTwin#FIRST_WARM_UP} before its N, the later ones N/2), each freed, the
     * pool destroyed, before the stream.
     */
    @Test
    void theFourTwoCallRowsRunBareEachOnItsOwnSetUpAndFreeWhatTheyAllocate() throws Exception {
        int n = 1000;
        Child child = runner(dir, Map.of(), "event_record_query:" + n, "alloc_stream_ordered:" + n,
                "alloc_from_pool:" + n, "alloc_unpooled:" + n);

        assertEquals(0, child.status(), child.err());
        Map<String, String> loops = Map.of("event_record_query", "eventLoop", "alloc_stream_ordered", "allocateLoop",
                "alloc_from_pool", "poolLoop", "alloc_unpooled", "unpooledLoop");
        for (Map.Entry<String, String> row : loops.entrySet()) {
            assertTrue(child.out().lines().anyMatch(l -> l.matches("TWIN bare " + row.getKey() + " " + n + " [1-9][0-9]* -")),
                    child.out());
            assertTrue(child.out().lines().anyMatch(l -> l.startsWith("COMPILED bare " + row.getKey() + " ")
                    && l.contains("dev.gatun.cuda.bench.BareTwin::" + row.getValue() + ": ")), child.out());
        }
        // Row by row, in order: one line per run (the unreported one, extra warm-ups, the reported
        // one), each counting the row's calls by kind: cuMemAlloc (in and out, then the pool-off
        // row's), cuMemAllocAsync (the stream-ordered row's), cuMemAllocFromPoolAsync (the pool row's).
        List<long[]> counts = new ArrayList<>();
        Pattern line = Pattern.compile(
                "FAKE cuStreamDestroy live_allocations=0 live_modules=0 live_pools=0 fills32=2 allocs=(\\d+) async=(\\d+) pooled=(\\d+)");
        for (String l : child.err().lines().filter(l -> l.startsWith("FAKE cuStreamDestroy ")).toList()) {
            Matcher m = line.matcher(l);
            assertTrue(m.matches(), l);
            counts.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3))});
        }
        long first = BareTwin.FIRST_WARM_UP + n; // a row's first run in the process
        long later = n / 2 + n;
        int i = 0;
        // The kind of call each row times: none (the event row), async, pooled, cuMemAlloc.
        for (int kind : new int[] {-1, 1, 2, 0}) {
            int runs = 0;
            while (i < counts.size() && (runs == 0 || runs < 2 + SameProcess.EXTRA_WARM_UPS)) {
                long ops = kind < 0 ? 0 : runs == 0 ? first : later;
                long[] expected = {2 + (kind == 0 ? ops : 0), kind == 1 ? ops : 0, kind == 2 ? ops : 0};
                if (runs > 0 && !Arrays.equals(expected, counts.get(i))) {
                    break; // the next row's first run
                }
                assertArrayEquals(expected, counts.get(i), "run " + runs + " of the row timing kind " + kind);
                i++;
                runs++;
            }
            assertTrue(runs >= 2, "kind " + kind + ": " + runs + " runs");
        }
        assertEquals(counts.size(), i);
    }

    @Test
    void aBareGemmThatLeftDUnwrittenFailsTheRunAfterTearingItsSessionDown() throws Exception {
        Child child = runner(dir, Map.of("FAKE_GEMM_SKIP_WRITE", "1"), "gemm_64:" + N);

        assertNotEquals(0, child.status(), child.out());
        assertTrue(child.err().contains("the bare twin of gemm_64 failed"), child.err());
        // The poison of D (fp16 NaN), read back: no GEMM wrote it.
        assertTrue(child.err().contains("D[0] is fp16 0x7e00 after the GEMMs, not 0x5400 (64.0)"), child.err());
        assertTrue(child.out().lines().noneMatch(l -> l.startsWith("TWIN ")), child.out());
        assertTrue(child.err().contains("FAKE cublasDestroy gemms=" + (BareTwin.FIRST_WARM_UP + N)), child.err());
        assertTrue(child.err().contains(
                "FAKE cuStreamDestroy live_allocations=0 live_modules=0 live_pools=0 fills32=2 allocs=6 async=0 pooled=0"),
                child.err());
    }

    @Test
    void whereCublasIsMissingTheRunnerReportsTheBareTwinNotRunOnceAndRunsNothingElseOfTheRow() throws Exception {
        TwinTest.assumeCublasMissing();
        // No stand-ins on the loader's path: neither cuBLAS nor a driver. A driver call would fail the run.
        Path empty = Files.createDirectories(dir.resolve("nothing"));
        Child child = child(empty, Map.of(), List.of(), twinsLibrary(), "gemm_lt_64", "gemm_64");

        assertEquals(0, child.status(), child.err());
        List<String> lines = child.out().lines().toList();
        assertEquals(2, lines.size(), child.out() + child.err());
        assertTrue(lines.get(0).startsWith("SKIP bare gemm_lt_64 cuBLAS missing: libcublasLt.so.13 could not be opened"),
                lines.get(0));
        assertTrue(lines.get(1).startsWith("SKIP bare gemm_64 cuBLAS missing: libcublasLt.so.13 could not be opened"),
                lines.get(1));
    }

    /**
     * compare's {@code BARE=1} with one process per twin: {@code Twin --bare ROW N} runs the row's
     * bare twin alone in its JVM (here against the stand-ins), warmed and checked as the Gatun
     * twin is, and prints its COMPILED and TWIN lines tagged bare; the event row's loop is
     * BareTwin's, the GEMM row's BareGemm's.
     */
    @Test
    void twinBareRunsARowsBareTwinAloneInItsProcessAndTagsItsLinesBare() throws Exception {
        Path libraries = Files.createDirectories(dir.resolve("stand-ins"));
        build(libraries, "libcuda.so.1", DRIVER);
        build(libraries, BareGemm.LT_LIBRARY, LT);
        build(libraries, BareGemm.CUBLAS_LIBRARY, CUBLAS);
        for (String[] row : List.of(new String[] {"event_record_query", "1000", "BareTwin::eventLoop"},
                new String[] {"gemm_64", String.valueOf(N), "BareGemm::gemmLoop"})) {
            Child child = java(libraries, Map.of(), List.of(Twin.class.getName(), "--bare", row[0], row[1], ptx().toString()));

            assertEquals(0, child.status(), child.err());
            List<String> lines = child.out().lines().toList();
            assertEquals(2, lines.size(), child.out());
            assertTrue(lines.get(0).matches("COMPILED bare " + row[0] + " (yes|no) dev\\.gatun\\.cuda\\.bench\\."
                    + row[2] + ": .*"), lines.get(0));
            assertTrue(lines.get(1).matches("TWIN bare " + row[0] + " " + row[1] + " [1-9][0-9]* -"), lines.get(1));
        }
    }

    /** What a child runner printed, and its exit status. */
    private record Child(int status, String out, String err) {
    }

    /** The runner with the stand-ins (built into {@code dir}) first on the loader's path. */
    private Child runner(Path dir, Map<String, String> environment, String... rows) throws Exception {
        return runner(dir, environment, List.of(), rows);
    }

    /** The same, with {@code options} for the child JVM. */
    private Child runner(Path dir, Map<String, String> environment, List<String> options, String... rows)
            throws Exception {
        Path libraries = Files.createDirectories(dir.resolve("stand-ins"));
        build(libraries, "libcuda.so.1", DRIVER);
        build(libraries, BareGemm.LT_LIBRARY, LT);
        build(libraries, BareGemm.CUBLAS_LIBRARY, CUBLAS);
        return child(libraries, environment, options, twinsLibrary(), rows);
    }

    private Path twinsLibrary() throws Exception {
        Path twins = Files.createDirectories(dir.resolve("twins"));
        return build(twins, "libtwins.so", TWINS);
    }

    /** {@code source} built with gcc as the shared library {@code soname} in {@code into}. */
    private Path build(Path into, String soname, String source) throws Exception {
        Path c = Files.writeString(dir.resolve(soname + ".c"), source);
        Path library = into.resolve(soname);
        CTwinBuildTest.run(List.of("gcc", "-Wall", "-Werror", "-Wno-unused-parameter", "-shared", "-fPIC", "-O1",
                "-Wl,-soname," + soname, "-o", library.toString(), c.toString()));
        return library;
    }

    /**
     * {@link SameProcess} with only the bare twin ({@code -Dgatun.bench.twins=bare}) and its loops
     * kept out of their callers as compare keeps them, in a JVM whose dynamic loader looks in
     * {@code libraries} first.
     */
    private Child child(Path libraries, Map<String, String> environment, List<String> options, Path twins,
            String... rows) throws IOException, InterruptedException {
        List<String> arguments = new ArrayList<>(options);
        arguments.addAll(List.of(SameProcess.class.getName(), twins.toString(), ptx().toString(), "1", "--bare", "true"));
        arguments.addAll(List.of(rows));
        return java(libraries, environment, arguments);
    }

    /** A PTX file's text as far as the stand-in driver reads it. */
    private Path ptx() throws IOException {
        return Files.writeString(dir.resolve("twins.ptx"), ".version 8.0\n.target sm_90\n.address_size 64\n");
    }

    /** {@code main} and its arguments in a JVM as {@link #child} makes it (compare's loop flags, the stand-ins first). */
    private Child java(Path libraries, Map<String, String> environment, List<String> main)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dgatun.bench.twins=bare", "-XX:CompileCommand=quiet",
                "-XX:CompileCommand=dontinline,dev.gatun.cuda.bench.BareGemm::*Loop",
                "-XX:CompileCommand=dontinline,dev.gatun.cuda.bench.BareTwin::*Loop", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path")));
        command.addAll(main);
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("LD_LIBRARY_PATH", libraries.toString());
        builder.environment().putAll(environment);
        Path err = dir.resolve("child.err");
        Process p = builder.redirectError(err.toFile()).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the runner did not end");
        return new Child(p.exitValue(), out, Files.readString(err));
    }
}
