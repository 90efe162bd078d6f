package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The driver called directly, as another library (ONNX Runtime, cuBLAS, a native engine) would,
 * outside Gatun: for tests of handles Gatun borrows. Every call returns the raw CUresult, and
 * the {@code *OrFail} helpers assert it is CUDA_SUCCESS.
 */
final class RawDriver {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup CUDA = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG;
    private static final MethodHandle CTX_SET_CURRENT = handle("cuCtxSetCurrent", INT, ValueLayout.ADDRESS);
    private static final MethodHandle CTX_CREATE = handle("cuCtxCreate_v4", INT, ValueLayout.ADDRESS,
            ValueLayout.ADDRESS, INT, INT);
    private static final MethodHandle CTX_DESTROY = handle("cuCtxDestroy_v2", INT, ValueLayout.ADDRESS);
    private static final MethodHandle STREAM_CREATE = handle("cuStreamCreate", INT, ValueLayout.ADDRESS, INT);
    private static final MethodHandle STREAM_QUERY = handle("cuStreamQuery", INT, ValueLayout.ADDRESS);
    private static final MethodHandle STREAM_DESTROY = handle("cuStreamDestroy_v2", INT, ValueLayout.ADDRESS);
    private static final MethodHandle MEM_ALLOC = handle("cuMemAlloc_v2", INT, ValueLayout.ADDRESS, LONG);
    private static final MethodHandle MEM_FREE = handle("cuMemFree_v2", INT, LONG);
    private static final MethodHandle MEMCPY_DTOH = handle("cuMemcpyDtoH_v2", INT, ValueLayout.ADDRESS, LONG, LONG);
    /** {@code CU_STREAM_NON_BLOCKING}. */
    private static final int NON_BLOCKING = 1;

    private RawDriver() {
    }

    private static MethodHandle handle(String name, ValueLayout result, ValueLayout... args) {
        return LINKER.downcallHandle(CUDA.findOrThrow(name), FunctionDescriptor.of(result, args));
    }

    /** Makes {@code context} current on the calling thread. */
    static void setCurrentOrFail(MemorySegment context) throws Throwable {
        // Safety: the driver checks the handle; tests pass a live context.
        assertEquals(0, (int) CTX_SET_CURRENT.invokeExact(context), "cuCtxSetCurrent");
    }

    /** A new context of device 0 (not the primary one), made current on the calling thread. */
    static MemorySegment createContextOrFail() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: out holds the CUcontext; no creation parameters; flags 0; device ordinal 0.
            assertEquals(0, (int) CTX_CREATE.invokeExact(out, MemorySegment.NULL, 0, 0), "cuCtxCreate");
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    static void destroyContextOrFail(MemorySegment context) throws Throwable {
        // Safety: a context the test created, with nothing of Gatun's in it.
        assertEquals(0, (int) CTX_DESTROY.invokeExact(context), "cuCtxDestroy");
    }

    /** A non-blocking stream of the calling thread's current context. */
    static MemorySegment createStreamOrFail() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: out holds the CUstream the driver writes.
            assertEquals(0, (int) STREAM_CREATE.invokeExact(out, NON_BLOCKING), "cuStreamCreate");
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    /** cuStreamQuery's result: 0 when idle, CUDA_ERROR_NOT_READY (600) when busy, an error for a bad stream. */
    static int queryStream(MemorySegment stream) throws Throwable {
        // Safety: the test passes a stream it created and has not destroyed.
        return (int) STREAM_QUERY.invokeExact(stream);
    }

    static void destroyStreamOrFail(MemorySegment stream) throws Throwable {
        // Safety: the stream the test created; Gatun only borrowed it.
        assertEquals(0, (int) STREAM_DESTROY.invokeExact(stream), "cuStreamDestroy");
    }

    /** {@code bytes} of device memory in the calling thread's current context; its address. */
    static long allocateOrFail(long bytes) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(LONG);
            // Safety: out holds the CUdeviceptr the driver writes.
            assertEquals(0, (int) MEM_ALLOC.invokeExact(out, bytes), "cuMemAlloc");
            return out.get(LONG, 0);
        }
    }

    static void freeOrFail(long address) throws Throwable {
        // Safety: memory the test allocated; Gatun only borrowed it.
        assertEquals(0, (int) MEM_FREE.invokeExact(address), "cuMemFree");
    }

    /** Copies {@code destination.byteSize()} bytes from {@code source} to the host (synchronous); the CUresult. */
    static int copyToHost(MemorySegment destination, long source) throws Throwable {
        // Safety: destination is a live native segment of the size copied; source is device
        // memory the test allocated, at least that large.
        return (int) MEMCPY_DTOH.invokeExact(destination, source, destination.byteSize());
    }
}
