package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.DevicePoolOptions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/** Random sequences of acquire, release and trim, checked against the fake device after every step. */
class DevicePoolPropertiesTest {

    private static final long MIB = 1L << 20;

    sealed interface Op {
        record Acquire(long bytes) implements Op {
        }

        /** Releases the outstanding block at {@code pick} modulo their number. */
        record Release(int pick) implements Op {
        }

        record Trim() implements Op {
        }
    }

    private record Held(long address, long bytes) {
    }

    @Provide
    Arbitrary<Long> bounds() {
        return Arbitraries.of(0L, 511L, 512L, 3000L, 64 * 1024L, MIB, 8 * MIB, DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Long> sizes = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.longs().between(0, 8192)),
                Tuple.of(3, Arbitraries.longs().between(MIB - 2, MIB + 2)),
                Tuple.of(2, Arbitraries.longs().between(MIB, 6 * MIB)),
                Tuple.of(1, Arbitraries.longs().between(SizeClasses.LARGEST - 1, SizeClasses.LARGEST + 1)));
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(5, sizes.map(Op.Acquire::new)),
                Tuple.of(5, Arbitraries.integers().between(0, 1000).map(Op.Release::new)),
                Tuple.of(1, Arbitraries.just(new Op.Trim())));
        return op.list().ofMaxSize(60);
    }

    @Property(tries = 300)
    void thePoolStaysWithinItsBoundAndNeverUndersizesOrSharesABlock(@ForAll("bounds") long bound,
            @ForAll("ops") List<Op> ops) {
        FakeBackend device = new FakeBackend();
        DevicePool pool = new DevicePool(device, new DevicePoolOptions(bound, false));
        List<Held> held = new ArrayList<>();
        long acquires = 0;
        long trims = 0;
        for (Op op : ops) {
            switch (op) {
                case Op.Acquire(long bytes) -> {
                    long address = pool.acquire(bytes);
                    if (bytes == 0) {
                        assertEquals(0, address);
                        continue;
                    }
                    acquires++;
                    assertTrue(device.sizeOf(address) >= bytes,
                            "block of " + device.sizeOf(address) + " bytes for a request of " + bytes);
                    held.add(new Held(address, bytes));
                }
                case Op.Release(int pick) -> {
                    if (held.isEmpty()) {
                        continue;
                    }
                    Held h = held.remove(pick % held.size());
                    assertEquals(0, pool.release(h.address(), h.bytes()));
                }
                case Op.Trim() -> {
                    assertEquals(0, pool.trim());
                    trims++;
                    assertEquals(0, pool.counters().retainedBlocks());
                }
            }
            DevicePoolCounters c = pool.counters();
            assertTrue(c.retainedBytes() <= bound, c.retainedBytes() + " retained under a bound of " + bound);
            assertEquals(acquires, c.hits() + c.misses());
            assertEquals(trims, c.trims());
            assertEquals(device.liveBlocks(), held.size() + c.retainedBlocks(), "live = held + retained");
            assertEquals(device.liveBlocks(), c.allocations() - c.frees());
            long heldBytes = 0;
            Set<Long> addresses = new HashSet<>();
            for (Held h : held) {
                heldBytes += device.sizeOf(h.address());
                assertTrue(addresses.add(h.address()), "0x" + Long.toHexString(h.address()) + " handed out twice");
            }
            assertEquals(device.liveBytes(), heldBytes + c.retainedBytes(), "live bytes = held + retained");
            if (bound == 0) {
                assertEquals(0, c.hits());
                assertEquals(0, c.retainedBytes());
            }
        }
        assertEquals(List.of(), device.misuse());
    }
}
