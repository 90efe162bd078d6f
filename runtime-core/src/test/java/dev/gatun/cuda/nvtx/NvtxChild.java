package dev.gatun.cuda.nvtx;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The child JVM of {@link NvtxInjectionTest}: runs one scenario with whatever
 * {@code NVTX_INJECTION64_PATH} and system properties the test gave it, then prints what it saw
 * ({@code child: } lines) and, when the recording library is loaded, everything the library
 * recorded ({@code nvtx: } lines).
 */
public final class NvtxChild {

    private NvtxChild() {
    }

    public static void main(String[] args) throws Throwable {
        System.out.println("child: attached=" + Nvtx.attached());
        switch (args[0]) {
            case "api" -> api();
            case "gatun" -> gatunOperations();
            case "misspelt" -> misspelt();
            default -> throw new IllegalArgumentException(args[0]);
        }
        String library = System.getenv("NVTX_INJECTION64_PATH");
        if (library != null && Nvtx.attached()) {
            printRecord(library);
        }
    }

    /** The public API: domains, categories, colors, payloads, nesting, markers, a range ended by another thread. */
    private static void api() throws InterruptedException {
        NvtxDomain engine = Nvtx.domain("engine");
        System.out.println("child: same domain=" + (Nvtx.domain("engine") == engine));
        engine.nameCategory(1, "io");
        NvtxLabel prefill = engine.label("prefill").withColor(0xFF76B900).withCategory(1);
        NvtxLabel token = engine.label("token");
        try (var _ = engine.push(prefill, 12)) {
            try (var _ = engine.push("decode")) {
                engine.mark(token);
                engine.mark(token, 3);
            }
            try (var _ = engine.push(token)) {
                engine.mark("ascii mark");
            }
        }
        NvtxDomain global = Nvtx.global();
        try (var _ = global.push(global.label("outer-global"))) {
            global.mark("inside-global");
        }
        long request = engine.start(engine.label("request"), 7);
        Thread ender = Thread.ofPlatform().start(() -> engine.end(request));
        ender.join();
        try {
            global.push(prefill);
            System.out.println("child: foreign label accepted");
        } catch (IllegalArgumentException e) {
            System.out.println("child: refused: " + e.getMessage());
        }
    }

    /** Gatun's own operations on the simulated driver: a launch, copies, a memset, a capture, replays, an upload, a pool miss. */
    private static void gatunOperations() {
        System.out.println("child: automatic ranges=" + Nvtx.automaticRanges());
        Simulated sim = new Simulated();
        CudaContext ctx = sim.pooledContext();
        Stream s = ctx.createStream();
        System.out.println("child: stream=" + s);
        ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("scale", "u64")));
        try (Kernel k = ctx.modules().kernel("m", "scale"); DeviceBuffer a = ctx.allocate(256);
                DeviceBuffer b = ctx.allocate(256)) {
            a.asInts().copyFrom(new int[64]);
            k.launch(s, LaunchConfig.of(1, 32), KernelArg.pointer(a));
            s.copy(b.asInts(), a.asInts());
            s.fill(b.asInts(), 7);
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                k.launch(s, LaunchConfig.of(1, 32), KernelArg.pointer(b));
                graph = capture.end();
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                exec.upload(s);
                exec.launch(s);
                exec.launch(s);
                System.out.println("child: exec=" + exec);
            }
            b.asInts().copyTo(new int[64]);
        }
        s.close();
        ctx.close();
    }

    /** A misspelt setting: the first context refuses to open, naming it. */
    private static void misspelt() {
        try {
            new Simulated().pooledContext();
            System.out.println("child: context opened");
        } catch (IllegalArgumentException e) {
            System.out.println("child: refused: " + e.getMessage());
        }
    }

    private static void printRecord(String library) throws Throwable {
        // The library the NVTX loader opened: dlopen of the same path returns the same mapping.
        SymbolLookup lookup = SymbolLookup.libraryLookup(library, Arena.global());
        MethodHandle log = Linker.nativeLinker().downcallHandle(lookup.find("recording_nvtx_log").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS));
        String text = ((MemorySegment) log.invokeExact()).reinterpret(Long.MAX_VALUE).getString(0);
        text.lines().forEach(line -> System.out.println("nvtx: " + line));
    }
}
