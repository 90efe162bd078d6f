package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Layer 2, the GPU coredump settings of the context ({@code cuCoredumpSetAttribute} /
 * {@code cuCoredumpGetAttribute}, which act on the current context). Cold: called once, as a
 * context with dumps on opens.
 *
 * <p>Each value is handed over in a block of exactly the size the driver asks for: a first call
 * with a NULL value returns that size (cuda.h: "the size of the memory region expected for
 * attrib will be placed in size"), so a boolean, the flags and the file name each get the
 * driver's own layout (its {@code bool}, its {@code int}, its fixed-size string buffer) without
 * Gatun assuming one.
 */
public final class CoredumpCalls {

    private static final Logger LOG = LoggerFactory.getLogger(CoredumpCalls.class);
    private static final String SET = "cuCoredumpSetAttribute";
    private static final String GET = "cuCoredumpGetAttribute";
    private static final int ENABLE_ON_EXCEPTION = CudaDriver.CU_COREDUMP_ENABLE_ON_EXCEPTION();
    private static final int FILE = CudaDriver.CU_COREDUMP_FILE();
    private static final int GENERATION_FLAGS = CudaDriver.CU_COREDUMP_GENERATION_FLAGS();
    private static final int SKIP_ABORT = CudaDriver.CU_COREDUMP_SKIP_ABORT();
    private static final int LIGHTWEIGHT_FLAGS = CudaDriver.CU_COREDUMP_LIGHTWEIGHT_FLAGS();
    private static final int DEFAULT_FLAGS = CudaDriver.CU_COREDUMP_DEFAULT_FLAGS();

    /** More than the largest value (the 1,024-byte file name): a larger size is a driver answer Gatun does not understand. */
    private static final long MAX_VALUE_BYTES = 4096;

    private final Checked c;

    CoredumpCalls(Checked c) {
        this.c = c;
    }

    /**
     * Turns dumps on for this context: the file first, then the generation flags with
     * {@code CU_COREDUMP_SKIP_ABORT} (read back: an environment variable set before CUDA
     * initialized takes precedence, and a driver that would still abort must never be told to
     * dump), then enable on exception (read back too). Records the file pattern the driver reports
     * in {@link Checked}, for the poisoned context's exception.
     *
     * @param file the absolute file pattern ({@code %p}, {@code %h}, {@code %t} expanded by the driver)
     * @param lightweight whether to leave device memory and non-relocated images out
     * @return the file pattern in force, as the driver reports it
     * @throws IllegalStateException when the driver's settings (from its environment variables)
     *     would abort the process on a fault, or keep dumps off
     */
    public String turnOn(String file, boolean lightweight) {
        requireSupport();
        try (Arena arena = Arena.ofConfined()) {
            set(FILE, "CU_COREDUMP_FILE", arena.allocateFrom(file, StandardCharsets.UTF_8), arena);
            int flags = (lightweight ? LIGHTWEIGHT_FLAGS : DEFAULT_FLAGS) | SKIP_ABORT;
            set(GENERATION_FLAGS, "CU_COREDUMP_GENERATION_FLAGS", arena.allocateFrom(ValueLayout.JAVA_INT, flags), arena);
            int inForce = get(GENERATION_FLAGS, "CU_COREDUMP_GENERATION_FLAGS", arena).get(ValueLayout.JAVA_INT, 0);
            if ((inForce & SKIP_ABORT) == 0) {
                throw new IllegalStateException("GPU coredumps were not turned on for device " + c.device() + ": the "
                        + "driver's generation flags are 0x" + Integer.toHexString(inForce) + " after Gatun set 0x"
                        + Integer.toHexString(flags) + ", without CU_COREDUMP_SKIP_ABORT, so a kernel fault would abort "
                        + "the JVM after the dump. An environment variable set before CUDA initialized takes "
                        + "precedence: unset CUDA_COREDUMP_GENERATION_FLAGS, or add skip_abort to it");
            }
            set(ENABLE_ON_EXCEPTION, "CU_COREDUMP_ENABLE_ON_EXCEPTION", arena.allocateFrom(ValueLayout.JAVA_BYTE,
                    (byte) 1), arena);
            if (get(ENABLE_ON_EXCEPTION, "CU_COREDUMP_ENABLE_ON_EXCEPTION", arena).get(ValueLayout.JAVA_BYTE, 0) == 0) {
                throw new IllegalStateException("GPU coredumps were not turned on for device " + c.device() + ": the "
                        + "driver reports them off after Gatun turned them on. An environment variable set before CUDA "
                        + "initialized takes precedence: unset CUDA_ENABLE_COREDUMP_ON_EXCEPTION, or set it to 1");
            }
            String pattern = get(FILE, "CU_COREDUMP_FILE", arena).getString(0, StandardCharsets.UTF_8);
            if (!pattern.equals(file)) {
                LOG.info("GPU coredumps of device {} go to {}, not {}: the driver's CUDA_COREDUMP_FILE environment "
                        + "variable takes precedence", c.device(), pattern, file);
            }
            c.coredumpsOn(pattern);
            return pattern;
        }
    }

    /**
     * Checks that the driver has what {@link #turnOn} needs, before any call.
     *
     * @throws dev.gatun.cuda.DriverTooOldException for a driver older than CUDA 12.5
     */
    public void requireSupport() {
        c.require(DriverFeature.GPU_COREDUMPS);
    }

    /**
     * Turns dumps off for this context again (a context opened before turned them on, and the
     * primary context keeps its settings); the generation flags keep their
     * {@code CU_COREDUMP_SKIP_ABORT}.
     */
    public void turnOff() {
        c.require(DriverFeature.GPU_COREDUMPS);
        try (Arena arena = Arena.ofConfined()) {
            set(ENABLE_ON_EXCEPTION, "CU_COREDUMP_ENABLE_ON_EXCEPTION", arena.allocateFrom(ValueLayout.JAVA_BYTE,
                    (byte) 0), arena);
        }
        c.coredumpsOn(null);
    }

    /**
     * Sets one attribute of the current context: {@code value} (a C bool, int or NUL-terminated
     * string) copied into a zero-filled block of the size the driver asks for.
     */
    private void set(int attribute, String name, MemorySegment value, Arena arena) {
        String operation = SET + "(" + name + ")";
        c.current(operation);
        MemorySegment block = arena.allocate(size(attribute, operation, true), 8);
        if (value.byteSize() > block.byteSize()) {
            throw new IllegalArgumentException(name + " takes at most " + block.byteSize() + " bytes; "
                    + value.byteSize() + " given");
        }
        block.copyFrom(value);
        MemorySegment size = c.out();
        size.set(ValueLayout.JAVA_LONG, 0, block.byteSize());
        // Safety: block holds the size the driver asked for, zero-filled past the value (a string
        // stays NUL-terminated); size is this thread's out block; the context is current.
        c.check(c.api.cuCoredumpSetAttribute(attribute, block, size), operation);
    }

    /** One attribute of the current context, in a block of {@code arena} of the size the driver asks for. */
    private MemorySegment get(int attribute, String name, Arena arena) {
        String operation = GET + "(" + name + ")";
        c.current(operation);
        MemorySegment block = arena.allocate(size(attribute, operation, false), 8);
        MemorySegment size = c.out();
        size.set(ValueLayout.JAVA_LONG, 0, block.byteSize());
        // Safety: block has the size the driver asked for; size is this thread's out block; the context is current.
        c.check(c.api.cuCoredumpGetAttribute(attribute, block, size), operation);
        return block;
    }

    /** The size of an attribute's value, as the driver answers a call with a NULL value. */
    private long size(int attribute, String operation, boolean forSet) {
        MemorySegment size = c.out();
        size.set(ValueLayout.JAVA_LONG, 0, 0);
        // Safety: a NULL value asks for the size only, which the driver writes to this thread's out block.
        c.check(forSet ? c.api.cuCoredumpSetAttribute(attribute, MemorySegment.NULL, size)
                : c.api.cuCoredumpGetAttribute(attribute, MemorySegment.NULL, size), operation);
        long bytes = size.get(ValueLayout.JAVA_LONG, 0);
        if (bytes <= 0 || bytes > MAX_VALUE_BYTES) {
            throw new IllegalStateException(operation + ": the driver asks for a value of " + bytes + " bytes, more "
                    + "than any of its coredump settings holds");
        }
        return bytes;
    }
}
