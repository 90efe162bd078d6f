package dev.gatun.cuda.nvtx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ChildJvm;
import dev.gatun.cuda.testing.Gcc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * NVTX through a real injection library on the CPU: {@code src/test/c/recording_nvtx.c}, built
 * here with gcc, named in {@code NVTX_INJECTION64_PATH} for a child JVM ({@link NvtxChild}),
 * records every call it receives; the child prints the record. A tool attaches once per
 * process, so each case is a JVM of its own.
 */
class NvtxInjectionTest {

    private static final Path SOURCE = Path.of("src/test/c/recording_nvtx.c");
    private static Path library;

    @BeforeAll
    static void buildTheRecordingLibrary() throws IOException, InterruptedException {
        Path out = Files.createDirectories(Path.of("target/nvtx"));
        library = out.resolve("librecording_nvtx.so").toAbsolutePath();
        List<String> arguments = new ArrayList<>(List.of("-Wall", "-Werror", "-shared", "-fPIC", "-O1", "-o",
                library.toString(), SOURCE.toString(), "-lpthread"));
        if (Files.isRegularFile(Gcc.CUDA_INCLUDE.resolve("nvtx3/nvToolsExt.h"))) {
            // Its own declarations of the protocol checked against the CUDA headers', where they are.
            arguments.addAll(List.of("-DRECORDING_NVTX_CHECK_HEADERS", "-I" + Gcc.CUDA_INCLUDE));
        }
        Gcc.run(arguments);
    }

    private static List<String> child(Map<String, String> environment, List<String> options, String scenario)
            throws IOException, InterruptedException {
        return ChildJvm.run(NvtxChild.class, environment, options, scenario);
    }

    private static Map<String, String> withTool() {
        return Map.of("NVTX_INJECTION64_PATH", library.toString());
    }

    /** What the recording library recorded, one call a line. */
    private static List<String> record(List<String> lines) {
        return ChildJvm.withPrefix(lines, "nvtx: ").stream().map(l -> l.substring("nvtx: ".length())).toList();
    }

    @Test
    void theToolGetsTheExportTablesAndFunctionTablesTheHeaderDescribes() throws Exception {
        List<String> lines = child(withTool(), List.of(), "api");
        assertEquals(List.of("child: attached=true"), ChildJvm.withPrefix(lines, "child: attached"));
        // NvtxExportTableCallbacks is 16 bytes, NVTX version 3, the reserved export table id
        // answers null; each table has NVTX_CBID_*_SIZE entries with null first and after the
        // last; an unknown module is refused.
        assertEquals(List.of("init callbacks=16 version=3 reserved-table=null",
                "tables core=16 core2=16 core-first=null core-last=null unknown-module=0"),
                record(lines).subList(0, 2));
    }

    @Test
    void rangesMarkersDomainsCategoriesAndPayloadsReachTheToolNestedAsCalled() throws Exception {
        List<String> lines = child(withTool(), List.of(), "api");
        assertEquals(List.of("child: same domain=true"), ChildJvm.withPrefix(lines, "child: same"));
        String none = " category=0 color=none payload=none";
        assertEquals(List.of(
                "domain domain=engine message=engine" + none + " depth=0 thread=1",
                "category domain=engine message=1=io" + none + " depth=0 thread=1",
                // One registration per message: the colored, categorized label shares prefill's.
                "register domain=engine message=prefill" + none + " depth=0 thread=1",
                "register domain=engine message=token" + none + " depth=0 thread=1",
                "push domain=engine message=registered:prefill category=1 color=FF76B900 payload=12 depth=1 thread=1",
                "push domain=engine message=decode" + none + " depth=2 thread=1",
                "mark domain=engine message=registered:token" + none + " depth=2 thread=1",
                "mark domain=engine message=registered:token category=0 color=none payload=3 depth=2 thread=1",
                "pop domain=engine message=decode" + none + " depth=1 thread=1",
                "push domain=engine message=registered:token" + none + " depth=2 thread=1",
                "mark domain=engine message=ascii mark" + none + " depth=2 thread=1",
                "pop domain=engine message=registered:token" + none + " depth=1 thread=1",
                "pop domain=engine message=registered:prefill" + none + " depth=0 thread=1",
                "register domain=(default) message=outer-global" + none + " depth=0 thread=1",
                "push domain=(default) message=registered:outer-global" + none + " depth=1 thread=1",
                "mark domain=(default) message=inside-global" + none + " depth=1 thread=1",
                "pop domain=(default) message=registered:outer-global" + none + " depth=0 thread=1",
                "register domain=engine message=request" + none + " depth=0 thread=1",
                // A range of the process, started on one thread and ended on another.
                "start domain=engine message=registered:request category=0 color=none payload=7 depth=0 thread=1 range=1",
                "end domain=engine message=registered:request" + none + " depth=0 thread=2 range=1"),
                record(lines).subList(2, record(lines).size()));
        List<String> refused = ChildJvm.withPrefix(lines, "child: refused");
        assertEquals(1, refused.size(), String.join("\n", lines));
        assertTrue(refused.getFirst().contains("'prefill' is of NVTX domain 'engine', not '(default)'"), refused.getFirst());
    }

    @Test
    void withoutAToolEveryCallDoesNothingAndGatunRangesStayOff() throws Exception {
        List<String> lines = child(Map.of(), List.of("-D" + Nvtx.RANGES_PROPERTY + "=true"), "gatun");
        assertEquals(List.of("child: attached=false", "child: automatic ranges=false"),
                ChildJvm.withPrefix(lines, "child: a"));
        lines = child(Map.of(), List.of(), "api");
        assertEquals(List.of("child: attached=false"), ChildJvm.withPrefix(lines, "child: attached"));
        // The checks do not depend on a tool: a label of another domain is refused all the same.
        assertEquals(1, ChildJvm.withPrefix(lines, "child: refused").size(), String.join("\n", lines));
    }

    @Test
    void aLibraryThatDeclinesOrIsNoInjectionLibraryLeavesEveryCallANoOp() throws Exception {
        Map<String, String> declining = Map.of("NVTX_INJECTION64_PATH", library.toString(), "RECORDING_NVTX_DECLINE", "1");
        assertEquals(List.of("child: attached=false"), ChildJvm.withPrefix(child(declining, List.of(), "api"),
                "child: attached"));
        // libm has no InitializeInjectionNvtx2; a path that does not exist cannot be opened.
        for (String path : List.of("libm.so.6", "/nonexistent/libnvtx-tool.so")) {
            List<String> lines = child(Map.of("NVTX_INJECTION64_PATH", path), List.of(), "api");
            assertEquals(List.of("child: attached=false"), ChildJvm.withPrefix(lines, "child: attached"), path);
        }
    }

    /** Gatun's own ranges, projected to what they show: the event, its message, payload and depth. */
    private static List<String> gatunRanges(List<String> lines) {
        return record(lines).stream().filter(l -> l.contains(" domain=Gatun ") && !l.startsWith("register ")
                && !l.startsWith("domain ")).map(l -> l.replaceAll(" domain=Gatun| category=0 color=none| thread=1", "")
                        .replaceAll(" range=[0-9]+", "")).toList();
    }

    private static String childSaid(List<String> lines, String what) {
        List<String> said = ChildJvm.withPrefix(lines, "child: " + what + "=");
        assertEquals(1, said.size(), String.join("\n", lines));
        return said.getFirst().substring(("child: " + what + "=").length());
    }

    @Test
    void gatunRangesItsOwnOperationsWhenTheSettingIsOn() throws Exception {
        List<String> lines = child(withTool(), List.of("-D" + Nvtx.RANGES_PROPERTY + "=true"), "gatun");
        assertEquals(List.of("child: automatic ranges=true"), ChildJvm.withPrefix(lines, "child: automatic"));
        String stream = childSaid(lines, "stream");
        String exec = childSaid(lines, "exec");
        assertEquals(List.of(
                // Two allocations of 256 bytes, each a miss of the device pool's 512-byte class.
                "start message=registered:device pool miss payload=512 depth=0",
                "end message=registered:device pool miss payload=none depth=0",
                "start message=registered:device pool miss payload=512 depth=0",
                "end message=registered:device pool miss payload=none depth=0",
                "push message=registered:copy host to device payload=256 depth=1",
                "pop message=registered:copy host to device payload=none depth=0",
                "push message=registered:scale payload=none depth=1",
                "pop message=registered:scale payload=none depth=0",
                "push message=registered:copy device to device payload=256 depth=1",
                "pop message=registered:copy device to device payload=none depth=0",
                "push message=registered:memset payload=256 depth=1",
                "pop message=registered:memset payload=none depth=0",
                // The capture is a range of the process around the launch it captured.
                "start message=registered:capture " + stream + " payload=none depth=0",
                "push message=registered:scale payload=none depth=1",
                "pop message=registered:scale payload=none depth=0",
                "end message=registered:capture " + stream + " payload=none depth=0",
                "push message=registered:upload " + exec + " payload=none depth=1",
                "pop message=registered:upload " + exec + " payload=none depth=0",
                "push message=registered:" + exec + " payload=none depth=1",
                "pop message=registered:" + exec + " payload=none depth=0",
                "push message=registered:" + exec + " payload=none depth=1",
                "pop message=registered:" + exec + " payload=none depth=0",
                "push message=registered:copy device to host payload=256 depth=1",
                "pop message=registered:copy device to host payload=none depth=0"), gatunRanges(lines));
        // The kernel's name is registered once, for both of its launches.
        assertEquals(1, record(lines).stream().filter(l -> l.startsWith("register domain=Gatun message=scale ")).count());
    }

    @Test
    void theRangeOnlyModeDropsEveryPayload() throws Exception {
        List<String> lines = child(withTool(),
                List.of("-D" + Nvtx.RANGES_PROPERTY + "=true", "-D" + Nvtx.PAYLOADS_PROPERTY + "=false"), "gatun");
        List<String> ranges = gatunRanges(lines);
        assertEquals(24, ranges.size(), String.join("\n", ranges));
        assertTrue(ranges.stream().allMatch(l -> l.contains(" payload=none ")), String.join("\n", ranges));
        assertTrue(ranges.contains("push message=registered:copy host to device payload=none depth=1"),
                String.join("\n", ranges));
    }

    @Test
    void gatunRangesNothingWhenTheSettingIsOff() throws Exception {
        for (List<String> options : List.of(List.<String>of(), List.of("-D" + Nvtx.RANGES_PROPERTY + "=false"))) {
            List<String> lines = child(withTool(), options, "gatun");
            assertEquals(List.of("child: attached=true", "child: automatic ranges=false"),
                    ChildJvm.withPrefix(lines, "child: a"));
            assertEquals(2, record(lines).size(), "only the tool's own init lines: " + record(lines));
        }
    }

    @Test
    void aMisspeltSettingFailsTheFirstContextNamingIt() throws Exception {
        List<String> lines = child(withTool(), List.of("-D" + Nvtx.RANGES_PROPERTY + "=yes"), "misspelt");
        assertEquals(List.of("child: refused: system property gatun.nvtx.ranges is 'yes'; set it to true or false "
                + "(any case), or leave it unset for false"), ChildJvm.withPrefix(lines, "child: refused"));
    }
}
