package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * How Gatun finds a driver function's entry point: {@code cuGetProcAddress_v2} asked for the
 * function's base name at the version of the prototype Gatun calls ({@link DriverFunction#version()}),
 * among the legacy-stream variants ({@code CU_GET_PROC_ADDRESS_LEGACY_STREAM}: the functions the
 * names in {@code cuda.h} stand for; Gatun names the stream of everything it queues, so the
 * per-thread default stream's variants are never wanted). A driver older than that version is
 * not asked at all: the driver answers a version newer than itself with
 * {@code CUDA_ERROR_INVALID_VALUE}, and an answer for an older version would be an older
 * prototype. The functions found {@linkplain DriverFunction#byName() by name} are not looked up
 * here.
 *
 * <p>One place decides, for the three callers: {@link NativeDriverApi}'s first call of a function
 * ({@link EntryPointBinder}), {@link Driver#require} before a feature's first step, and the
 * simulated driver, which hides the functions newer than the version it reports.
 */
public final class EntryPoints {

    /** {@code cuGetProcAddress_v2}, as the driver (or the simulated one) answers it. */
    @FunctionalInterface
    public interface ProcAddress {
        /** See {@link DriverApi#cuGetProcAddress_v2}. */
        int cuGetProcAddress_v2(MemorySegment symbol, MemorySegment pfn, int cudaVersion, long flags,
                MemorySegment symbolStatus);
    }

    /** The flags Gatun asks with: the legacy-stream variants, the ones {@code cuda.h} names. */
    public static final long LEGACY_STREAM = CudaDriver.CU_GET_PROC_ADDRESS_LEGACY_STREAM();
    private static final int FOUND = CudaDriver.CU_GET_PROC_ADDRESS_SUCCESS();
    private static final int SYMBOL_NOT_FOUND = CudaDriver.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND();
    private static final int VERSION_NOT_SUFFICIENT = CudaDriver.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT();

    /** An entry point found, or why not (the detail of the exception). */
    private record Lookup(MemorySegment address, String missing) {
    }

    private EntryPoints() {
    }

    /**
     * The address of {@code function}'s entry point in a driver for CUDA {@code installed}.
     *
     * @throws DriverTooOldException naming the function's feature, the version the function needs
     *     and {@code installed}, when the driver is older than the entry point (it is not asked) or
     *     does not return it
     * @throws IllegalArgumentException for a function found by name
     */
    public static MemorySegment resolve(ProcAddress driver, int installed, DriverFunction function) {
        Lookup found = lookup(driver, installed, function);
        if (found.missing() != null) {
            throw tooOld(function, installed, found.missing());
        }
        return found.address();
    }

    /** Why {@code function} cannot be called on a driver for CUDA {@code installed}, or null when it can. */
    static String missing(ProcAddress driver, int installed, DriverFunction function) {
        return lookup(driver, installed, function).missing();
    }

    /** The exception for {@code function}, which a driver for CUDA {@code installed} lacks, and {@code why}. */
    static DriverTooOldException tooOld(DriverFunction function, int installed, String why) {
        return new DriverTooOldException(DriverFeature.of(function).title(), function.name(), function.version(),
                installed, why);
    }

    private static Lookup lookup(ProcAddress driver, int installed, DriverFunction function) {
        if (function.byName()) {
            throw new IllegalArgumentException(function + " is found by name, not through cuGetProcAddress_v2");
        }
        if (installed < function.version()) {
            return new Lookup(null, "");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment symbol = arena.allocateFrom(function.symbol());
            MemorySegment pfn = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            // Safety: symbol is NUL-terminated; pfn and status are zeroed out-parameters of the
            // sizes the driver writes (a pointer, an enum); all live for the call.
            int r = driver.cuGetProcAddress_v2(symbol, pfn, function.version(), LEGACY_STREAM, status);
            int s = status.get(ValueLayout.JAVA_INT, 0);
            MemorySegment address = pfn.get(ValueLayout.ADDRESS, 0);
            if (r == 0 && s == FOUND && !address.equals(MemorySegment.NULL)) {
                return new Lookup(address, null);
            }
            String asked = "cuGetProcAddress_v2(\"" + function.symbol() + "\", " + function.version() + ") answered ";
            return new Lookup(null, "the driver does not have it: " + asked + (r != 0 ? CuResults.name(r)
                    : s != FOUND ? statusName(s) : "no address"));
        }
    }

    private static String statusName(int status) {
        if (status == SYMBOL_NOT_FOUND) {
            return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
        } else if (status == VERSION_NOT_SUFFICIENT) {
            return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
        }
        return "symbol status " + status;
    }
}
