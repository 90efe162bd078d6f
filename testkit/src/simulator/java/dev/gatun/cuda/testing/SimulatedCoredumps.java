package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The simulated driver's GPU coredump settings of each context ({@code cuCoredumpSetAttribute} /
 * {@code cuCoredumpGetAttribute} on the current context), as strict as cuda.h: a NULL value asks
 * for the value's size; any other call must pass exactly that size (a C {@code bool} of one byte
 * holding 0 or 1, an {@code int} of generation flags with no unknown bit, a NUL-terminated file
 * name in a 1,024-byte buffer); the user-trigger settings cannot be set per context; there must be
 * a current context. Settings an environment variable gave the driver before it initialized
 * ({@link FakeDriverApi#coredumpEnvironment}) take precedence: a set succeeds and changes nothing,
 * as cuda.h says. The simulated driver writes no dump: a test plays that part.
 */
final class SimulatedCoredumps {

    private static final int ENABLE_ON_EXCEPTION = CudaDriver.CU_COREDUMP_ENABLE_ON_EXCEPTION();
    private static final int TRIGGER_HOST = CudaDriver.CU_COREDUMP_TRIGGER_HOST();
    private static final int ENABLE_USER_TRIGGER = CudaDriver.CU_COREDUMP_ENABLE_USER_TRIGGER();
    private static final int FILE = CudaDriver.CU_COREDUMP_FILE();
    private static final int PIPE = CudaDriver.CU_COREDUMP_PIPE();
    private static final int GENERATION_FLAGS = CudaDriver.CU_COREDUMP_GENERATION_FLAGS();
    /** Every CUCoredumpGenerationFlags bit of CUDA 13.0. */
    private static final int KNOWN_FLAGS = CudaDriver.CU_COREDUMP_LIGHTWEIGHT_FLAGS() | CudaDriver.CU_COREDUMP_SKIP_ABORT();
    private static final int STRING_BYTES = 1024;

    private final FakeDriverApi gpu;
    /** Per context handle: the settings made so far (the rest have their defaults). */
    private final Map<Long, Map<Integer, Object>> settings = new HashMap<>();
    /** Settings from environment variables, which no call changes. */
    final Map<Integer, Object> environment = new HashMap<>();

    SimulatedCoredumps(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuCoredumpSetAttribute(int attrib, MemorySegment value, MemorySegment size) {
        int refused = checkCall("cuCoredumpSetAttribute", attrib, value, size);
        if (refused != SUCCESS || value.equals(MemorySegment.NULL)) {
            return refused;
        }
        if (attrib == ENABLE_USER_TRIGGER || attrib == PIPE) {
            gpu.logs.refused("cuCoredumpSetAttribute", "attrib " + attrib + " cannot be set per context");
            return INVALID_VALUE;
        }
        MemorySegment v = value.reinterpret(sizeOf(attrib));
        Object parsed;
        if (attrib == FILE) {
            int end = 0;
            while (end < STRING_BYTES && v.get(ValueLayout.JAVA_BYTE, end) != 0) {
                end++;
            }
            if (end == 0 || end == STRING_BYTES) {
                gpu.logs.refused("cuCoredumpSetAttribute", "the file name is empty or not NUL-terminated");
                return INVALID_VALUE;
            }
            parsed = v.getString(0, StandardCharsets.UTF_8);
        } else if (attrib == GENERATION_FLAGS) {
            int flags = v.get(ValueLayout.JAVA_INT, 0);
            if ((flags & ~KNOWN_FLAGS) != 0) {
                gpu.logs.refused("cuCoredumpSetAttribute", "unknown generation flags 0x" + Integer.toHexString(flags));
                return INVALID_VALUE;
            }
            parsed = flags;
        } else {
            byte b = v.get(ValueLayout.JAVA_BYTE, 0);
            if (b != 0 && b != 1) {
                gpu.logs.refused("cuCoredumpSetAttribute", "bool value " + b + " for attrib " + attrib);
                return INVALID_VALUE;
            }
            parsed = b == 1;
        }
        if (!environment.containsKey(attrib)) {
            settings.computeIfAbsent(gpu.contexts.current(), c -> new HashMap<>()).put(attrib, parsed);
        }
        return SUCCESS;
    }

    public int cuCoredumpGetAttribute(int attrib, MemorySegment value, MemorySegment size) {
        int refused = checkCall("cuCoredumpGetAttribute", attrib, value, size);
        if (refused != SUCCESS || value.equals(MemorySegment.NULL)) {
            return refused;
        }
        MemorySegment v = value.reinterpret(sizeOf(attrib));
        Object setting = setting(gpu.contexts.current(), attrib);
        if (setting instanceof String s) {
            v.fill((byte) 0);
            v.setString(0, s, StandardCharsets.UTF_8);
        } else if (setting instanceof Integer i) {
            v.set(ValueLayout.JAVA_INT, 0, i);
        } else {
            v.set(ValueLayout.JAVA_BYTE, 0, (byte) ((Boolean) setting ? 1 : 0));
        }
        return SUCCESS;
    }

    /** What both functions check: the attribute, the size (written when value is NULL); a context is current (SimulatedCurrentContexts). */
    private int checkCall(String function, int attrib, MemorySegment value, MemorySegment size) {
        if (attrib < ENABLE_ON_EXCEPTION || attrib > GENERATION_FLAGS || size.equals(MemorySegment.NULL)) {
            gpu.logs.refused(function, "attrib " + attrib + " or a NULL size");
            return INVALID_VALUE;
        }
        MemorySegment s = size.reinterpret(8);
        if (value.equals(MemorySegment.NULL)) {
            s.set(ValueLayout.JAVA_LONG, 0, sizeOf(attrib));
            return SUCCESS;
        }
        long given = s.get(ValueLayout.JAVA_LONG, 0);
        if (given != sizeOf(attrib)) {
            gpu.logs.refused(function, "size " + given + " for attrib " + attrib + ", which takes " + sizeOf(attrib));
            return INVALID_VALUE;
        }
        return SUCCESS;
    }

    private static long sizeOf(int attrib) {
        return attrib == FILE || attrib == PIPE ? STRING_BYTES : attrib == GENERATION_FLAGS ? 4 : 1;
    }

    /** A context's setting: the environment's, else the one set, else the driver's default. */
    Object setting(long context, int attrib) {
        Object env = environment.get(attrib);
        if (env != null) {
            return env;
        }
        Object set = settings.getOrDefault(context, Map.of()).get(attrib);
        if (set != null) {
            return set;
        }
        if (attrib == FILE) {
            return "core.cuda.simulated." + ProcessHandle.current().pid();
        }
        if (attrib == PIPE) {
            return "corepipe.cuda.simulated." + ProcessHandle.current().pid();
        }
        return attrib == GENERATION_FLAGS ? (Object) 0 : (Object) (attrib == TRIGGER_HOST);
    }
}
