package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.GreenContextCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A device's SMs split into groups, each a green context ({@link CudaContext#isGreen()}), so that
 * work on one group cannot take SMs from another: prefill on one, decode on the other, and a long
 * kernel on the first does not starve a short one on the second. Made by
 * {@link Device#partitionSms}; the SMs the groups leave over form the {@link #remainder()}.
 *
 * <p>Each group is a whole context with the rules of any: its own streams (which run on its SMs
 * only), memory, events, graphs, modules, live-owner counts and leak tracking, and a
 * {@link CudaContext#close()} that refuses while owners made from it are open, then drains it and
 * destroys the green context. A kernel loaded once for all of them is a {@link KernelLibrary}'s.
 * The driver lets a green context be current to one thread at a time: calls that make a context
 * current (creating, allocating, loading, synchronizing) on one group should come from one
 * thread at a time; launches, copies, records and waits name their stream and need no current
 * context.
 */
public final class SmPartition implements AutoCloseable {

    private final Device device;
    private final List<CudaContext> groups;
    private final CudaContext remainder;

    private SmPartition(Device device, List<CudaContext> groups, CudaContext remainder) {
        this.device = device;
        this.groups = List.copyOf(groups);
        this.remainder = remainder;
    }

    /** Splits {@code device}'s SMs (see {@link Device#partitionSms}); the arguments are checked. */
    static SmPartition split(Device device, int minCount, int groups, ContextOptions options) {
        GreenContextCalls calls = GreenContextCalls.of(device.cuda().driver(), device.ordinal());
        List<CudaContext> made = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment all = GreenContextCalls.resources(arena, 1);
            calls.smResource(device.handle(), all);
            MemorySegment result = GreenContextCalls.resources(arena, groups);
            MemorySegment rest = GreenContextCalls.resources(arena, 1);
            int n = calls.split(result, groups, all, rest, minCount);
            if (n < groups) {
                throw new IllegalArgumentException("device " + device.ordinal() + "'s " + GreenContextCalls.smCount(all)
                        + " SMs make only " + n + " groups of at least " + minCount + " SMs, not " + groups
                        + " (the driver rounds a group up to its granularity, 8 SMs on Hopper); ask for fewer or smaller groups");
            }
            for (int i = 0; i < n; i++) {
                made.add(open(device, calls, GreenContextCalls.resource(result, i), options));
            }
            CudaContext left = GreenContextCalls.smCount(rest) > 0 ? open(device, calls, rest, options) : null;
            return new SmPartition(device, made, left);
        } catch (RuntimeException e) {
            for (CudaContext c : made) {
                try {
                    c.close(); // new and empty: nothing refuses
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** One group made a green context, and that made a Gatun context; the green context destroyed if that fails. */
    private static CudaContext open(Device device, GreenContextCalls calls, MemorySegment resource,
            ContextOptions options) {
        MemorySegment desc = calls.describe(resource);
        MemorySegment green = calls.create(desc, device.handle());
        try {
            MemorySegment context = calls.context(green);
            return new CudaContext(device, context,
                    new CudaContext.GreenContext(green, calls, GreenContextCalls.smCount(resource)), options);
        } catch (RuntimeException e) {
            int r = calls.destroy(green);
            if (r != 0) {
                e.addSuppressed(calls.failure(r));
            }
            throw e;
        }
    }

    /** {@return the device whose SMs these are} */
    public Device device() {
        return device;
    }

    /** {@return the groups asked for, in the driver's order, each a green context of at least the asked SMs} */
    public List<CudaContext> groups() {
        return groups;
    }

    /**
     * {@return the group at {@code index}}
     *
     * @param index from 0 to {@code groups().size() - 1}
     */
    public CudaContext group(int index) {
        return groups.get(index);
    }

    /** {@return the SMs the groups left over, as a green context of their own; empty when none are left} */
    public Optional<CudaContext> remainder() {
        return Optional.ofNullable(remainder);
    }

    /**
     * Closes every group and the remainder ({@link CudaContext#close()}: each drains and destroys
     * its green context). Each is tried; the first refusal is thrown, with the others suppressed.
     *
     * @throws IllegalStateException when owners made from a group are still open (that group
     *     stays open; close them and call this again)
     */
    @Override
    public void close() {
        RuntimeException first = null;
        List<CudaContext> all = new ArrayList<>(groups);
        if (remainder != null) {
            all.add(remainder);
        }
        for (CudaContext c : all) {
            try {
                c.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("SmPartition[device " + device.ordinal() + ":");
        for (CudaContext c : groups) {
            b.append(' ').append(c.smCount());
        }
        return b.append(remainder != null ? " + " + remainder.smCount() + " left]" : "]").toString();
    }
}
