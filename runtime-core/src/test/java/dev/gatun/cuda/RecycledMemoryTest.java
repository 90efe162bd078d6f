package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The hot kinds of device memory recycle their memory objects: the next allocation of the kind
 * is served by the object the last close freed, while every handle of an earlier allocation
 * stays closed, and its close touches nothing of the new one. Leak tracking recycles nothing.
 */
class RecycledMemoryTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @AfterEach
    void nothingLeft() {
        ctx.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aStaleHandleStaysClosedWhenItsMemoryObjectServesTheNextAllocation() {
        Stream s = ctx.computeStream();
        DeviceBuffer first = s.allocate(256);
        first.close();
        DeviceBuffer second = s.allocate(512);
        assertSame(first.resource(), second.resource(), "the freed object serves the next allocation");
        assertTrue(first.isClosed());
        assertFalse(second.isClosed());
        assertThrows(IllegalStateException.class, first::address);
        assertThrows(IllegalStateException.class, first::byteSize);
        assertThrows(IllegalStateException.class, () -> s.memset(first.bytes(), (byte) 1));
        first.close(); // a stale close frees nothing of the new allocation
        assertFalse(second.isClosed());
        assertEquals(512, second.byteSize());
        s.fill(second.asInts(), 7);
        int[] out = new int[128];
        second.asInts().copyTo(out);
        assertEquals(7, out[127]);
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        second.close();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
    }

    @Test
    void aLaunchPreparedWithAClosedBufferIsRefusedAfterItsMemoryObjectWasReused() {
        DeviceBuffer first = ctx.allocate(64);
        first.close();
        try (DeviceBuffer second = ctx.allocate(64)) {
            assertSame(first.resource(), second.resource());
            assertThrows(IllegalStateException.class, () -> ctx.computeStream().fill(first.asInts(), 1));
            assertEquals(64, second.byteSize());
        }
    }

    @Test
    void withLeakTrackingNothingIsRecycled() {
        Simulated other = new Simulated();
        CudaContext withTracking = other.cuda.device(0).context(ContextOptions.defaults().withLeakTracking(true));
        try {
            Stream s = withTracking.computeStream();
            DeviceBuffer first = s.allocate(256);
            first.close();
            try (DeviceBuffer second = s.allocate(256)) {
                assertNotSame(first.resource(), second.resource(), "leak tracking lists resource objects: none reused");
            }
        } finally {
            withTracking.close();
        }
    }
}
