package dev.gatun.cuda.internal.nvtx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The NVTX functions Gatun calls, bound once per class loader to the slots the tool filled
 * ({@link InjectionLoader}). Each handle is a {@code static final}: null when no tool is attached
 * or the tool left that slot empty, so that a call with no tool is a test of a constant the JIT
 * folds away, with nothing allocated, as a C client's call through a null slot is one load and
 * one branch. Class initialization is the header's {@code nvtxInitOnce}: it runs once, and a
 * thread that arrives meanwhile waits for it.
 *
 * <p>The slots are read once, right after the tool's {@code InitializeInjectionNvtx2} returned:
 * NVTX tools fill their tables while they initialize (the header itself turns every slot still
 * unfilled then into a no-op for good). A tool that changed a slot later would not be followed.
 *
 * <p>Every method forwards its arguments unchecked; the public API ({@code dev.gatun.cuda.nvtx})
 * checks them and owns the native memory they point at.
 */
public final class NvtxCalls {

    private static final Optional<ExportTables> TABLES = InjectionLoader.attach(System.getenv(InjectionLoader.VARIABLE));

    /** Whether a tool attached: {@value InjectionLoader#VARIABLE} named an injection library that initialized. */
    public static final boolean ATTACHED = TABLES.isPresent();

    private static final FunctionDescriptor ATTRIBUTES_TO_VOID = FunctionDescriptor.ofVoid(ADDRESS);
    private static final FunctionDescriptor DOMAIN_ATTRIBUTES_TO_VOID = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS);

    // CORE: the default domain.
    private static final MethodHandle MARK_EX = core(NvtxAbi.CORE_MARK_EX, ATTRIBUTES_TO_VOID);
    private static final MethodHandle RANGE_START_EX = core(NvtxAbi.CORE_RANGE_START_EX,
            FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    private static final MethodHandle RANGE_END = core(NvtxAbi.CORE_RANGE_END, FunctionDescriptor.ofVoid(JAVA_LONG));
    private static final MethodHandle RANGE_PUSH_EX = core(NvtxAbi.CORE_RANGE_PUSH_EX,
            FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle RANGE_POP = core(NvtxAbi.CORE_RANGE_POP, FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle NAME_CATEGORY_A = core(NvtxAbi.CORE_NAME_CATEGORY_A,
            FunctionDescriptor.ofVoid(JAVA_INT, ADDRESS));

    // CORE2: named domains, and registered strings of any domain.
    private static final MethodHandle DOMAIN_MARK_EX = core2(NvtxAbi.CORE2_DOMAIN_MARK_EX, DOMAIN_ATTRIBUTES_TO_VOID);
    private static final MethodHandle DOMAIN_RANGE_START_EX = core2(NvtxAbi.CORE2_DOMAIN_RANGE_START_EX,
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, ADDRESS));
    private static final MethodHandle DOMAIN_RANGE_END = core2(NvtxAbi.CORE2_DOMAIN_RANGE_END,
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
    private static final MethodHandle DOMAIN_RANGE_PUSH_EX = core2(NvtxAbi.CORE2_DOMAIN_RANGE_PUSH_EX,
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle DOMAIN_RANGE_POP = core2(NvtxAbi.CORE2_DOMAIN_RANGE_POP,
            FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle DOMAIN_NAME_CATEGORY_A = core2(NvtxAbi.CORE2_DOMAIN_NAME_CATEGORY_A,
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS));
    private static final MethodHandle DOMAIN_REGISTER_STRING_A = core2(NvtxAbi.CORE2_DOMAIN_REGISTER_STRING_A,
            FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
    private static final MethodHandle DOMAIN_CREATE_A = core2(NvtxAbi.CORE2_DOMAIN_CREATE_A,
            FunctionDescriptor.of(ADDRESS, ADDRESS));

    /** What push and pop return when nothing tracks them ({@code NVTX_NO_PUSH_POP_TRACKING}). */
    public static final int NO_PUSH_POP_TRACKING = NvtxAbi.NO_PUSH_POP_TRACKING;

    private NvtxCalls() {
    }

    private static MethodHandle core(int id, FunctionDescriptor descriptor) {
        return bind(NvtxAbi.MODULE_CORE, id, descriptor);
    }

    private static MethodHandle core2(int id, FunctionDescriptor descriptor) {
        return bind(NvtxAbi.MODULE_CORE2, id, descriptor);
    }

    private static MethodHandle bind(int module, int id, FunctionDescriptor descriptor) {
        if (TABLES.isEmpty()) {
            return null;
        }
        MemorySegment function = TABLES.get().slot(module, id);
        // Safety: the tool put a function of this slot's type (nvtxTypes.h's *_impl_fntype, whose
        // prototype the descriptor is) into a slot of the table we gave it, in a library that
        // stays loaded for the process.
        return function.equals(MemorySegment.NULL) ? null : Linker.nativeLinker().downcallHandle(function, descriptor);
    }

    /** Whether the tool implements registered strings ({@code nvtxDomainRegisterStringA}). */
    public static boolean registersStrings() {
        return DOMAIN_REGISTER_STRING_A != null;
    }

    /** Whether the tool implements named domains ({@code nvtxDomainCreateA}). */
    public static boolean createsDomains() {
        return DOMAIN_CREATE_A != null;
    }

    /** {@code nvtxMarkEx}, or {@code nvtxDomainMarkEx} when {@code domain} is not NULL. */
    public static void mark(MemorySegment domain, MemorySegment attributes) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                if (MARK_EX != null) {
                    MARK_EX.invokeExact(attributes);
                }
            } else if (DOMAIN_MARK_EX != null) {
                DOMAIN_MARK_EX.invokeExact(domain, attributes);
            }
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxRangeStartEx} or {@code nvtxDomainRangeStartEx}: the range's id, 0 when no tool takes it. */
    public static long start(MemorySegment domain, MemorySegment attributes) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                return RANGE_START_EX == null ? 0 : (long) RANGE_START_EX.invokeExact(attributes);
            }
            return DOMAIN_RANGE_START_EX == null ? 0 : (long) DOMAIN_RANGE_START_EX.invokeExact(domain, attributes);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxRangeEnd} or {@code nvtxDomainRangeEnd}. */
    public static void end(MemorySegment domain, long range) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                if (RANGE_END != null) {
                    RANGE_END.invokeExact(range);
                }
            } else if (DOMAIN_RANGE_END != null) {
                DOMAIN_RANGE_END.invokeExact(domain, range);
            }
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxRangePushEx} or {@code nvtxDomainRangePushEx}: the depth, or {@link #NO_PUSH_POP_TRACKING}. */
    public static int push(MemorySegment domain, MemorySegment attributes) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                return RANGE_PUSH_EX == null ? NO_PUSH_POP_TRACKING : (int) RANGE_PUSH_EX.invokeExact(attributes);
            }
            return DOMAIN_RANGE_PUSH_EX == null ? NO_PUSH_POP_TRACKING
                    : (int) DOMAIN_RANGE_PUSH_EX.invokeExact(domain, attributes);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxRangePop} or {@code nvtxDomainRangePop}: the depth, or {@link #NO_PUSH_POP_TRACKING}. */
    public static int pop(MemorySegment domain) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                return RANGE_POP == null ? NO_PUSH_POP_TRACKING : (int) RANGE_POP.invokeExact();
            }
            return DOMAIN_RANGE_POP == null ? NO_PUSH_POP_TRACKING : (int) DOMAIN_RANGE_POP.invokeExact(domain);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxNameCategoryA} or {@code nvtxDomainNameCategoryA}. */
    public static void nameCategory(MemorySegment domain, int category, MemorySegment name) {
        try {
            if (domain.equals(MemorySegment.NULL)) {
                if (NAME_CATEGORY_A != null) {
                    NAME_CATEGORY_A.invokeExact(category, name);
                }
            } else if (DOMAIN_NAME_CATEGORY_A != null) {
                DOMAIN_NAME_CATEGORY_A.invokeExact(domain, category, name);
            }
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxDomainRegisterStringA} (NULL {@code domain}: the default one): the handle, NULL when not registered. */
    public static MemorySegment registerString(MemorySegment domain, MemorySegment string) {
        try {
            return DOMAIN_REGISTER_STRING_A == null ? MemorySegment.NULL
                    : (MemorySegment) DOMAIN_REGISTER_STRING_A.invokeExact(domain, string);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** {@code nvtxDomainCreateA}: the domain's handle, NULL when the tool does not create domains. */
    public static MemorySegment createDomain(MemorySegment name) {
        try {
            return DOMAIN_CREATE_A == null ? MemorySegment.NULL : (MemorySegment) DOMAIN_CREATE_A.invokeExact(name);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /** A downcall handle throws only what the callee's Java side throws, and these have none. */
    private static AssertionError unexpected(Throwable t) {
        return new AssertionError("an NVTX downcall threw", t);
    }
}
