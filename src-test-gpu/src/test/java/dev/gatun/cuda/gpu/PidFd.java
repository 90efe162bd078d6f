package dev.gatun.cuda.gpu;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * A test helper, not part of the library: takes a copy of another process's file descriptor
 * with {@code pidfd_open} and {@code pidfd_getfd} (Linux 5.6 or later, x86-64 syscall numbers),
 * as a child process receives the descriptor of its parent's exported memory pool. A descriptor
 * is not a number another process can use; a real application would send it over a Unix
 * socket with {@code SCM_RIGHTS} instead. {@code pidfd_getfd} needs ptrace permission over the
 * other process (root has it).
 */
final class PidFd {

    private static final long PIDFD_OPEN = 434;
    private static final long PIDFD_GETFD = 438;
    private static final int EPERM = 1;
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    /** {@code long syscall(long number, ...)} with three variadic longs, capturing errno. */
    private static final MethodHandle SYSCALL = LINKER.downcallHandle(LINKER.defaultLookup().find("syscall").orElseThrow(),
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
            Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private PidFd() {
    }

    /**
     * A new descriptor of this process for descriptor {@code fd} of process {@code pid}; the
     * caller closes it.
     *
     * @throws IllegalStateException when a call fails; for {@code EPERM}, naming the missing ptrace permission
     */
    static int copyOf(long pid, int fd) throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            long pidfd = (long) SYSCALL.invokeExact(state, PIDFD_OPEN, pid, 0L, 0L);
            if (pidfd < 0) {
                throw new IllegalStateException("pidfd_open(" + pid + ") failed with errno " + errno(state)
                        + " (Linux 5.6 or later is needed)");
            }
            try {
                long copy = (long) SYSCALL.invokeExact(state, PIDFD_GETFD, pidfd, (long) fd, 0L);
                if (copy < 0) {
                    int errno = errno(state);
                    throw new IllegalStateException("pidfd_getfd(process " + pid + ", fd " + fd + ") failed with errno " + errno
                            + (errno == EPERM ? " (EPERM): this process lacks ptrace permission over process " + pid
                            + "; run the suite as root, or loosen kernel.yama.ptrace_scope" : ""));
                }
                return (int) copy;
            } finally {
                close((int) pidfd);
            }
        }
    }

    /** Closes a descriptor of this process. */
    static void close(int fd) throws Throwable {
        if ((int) CLOSE.invokeExact(fd) != 0) {
            throw new IllegalStateException("close(" + fd + ") failed");
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }
}
