package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class DeviceTest {

    @Test
    void reportsWhatTheDriverReports() {
        Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
        assertEquals(2, sim.cuda.deviceCount());
        Device d = sim.cuda.device(1);
        assertEquals("Simulated GPU 1", d.name());
        assertEquals("0000:07:00.0", d.pciBusId());
        DeviceCapabilities c = d.capabilities();
        assertEquals("9.0", c.computeCapability());
        assertEquals("compute_90", c.ptxArchitecture());
        assertEquals("sm_90", c.cubinArchitecture());
        assertEquals(132, c.multiprocessorCount());
        assertEquals(1024, c.maxThreadsPerBlock());
        assertEquals(227 * 1024, c.sharedMemoryPerBlockOptIn());
        assertEquals(141L << 30, c.totalMemoryBytes());
        assertEquals(13000, sim.cuda.driverVersion().encoded());
        assertEquals("13.0", sim.cuda.driverVersion().toString());
    }

    @Test
    void unknownOrdinalsAreRejectedWithTheValidRange() {
        Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> sim.cuda.device(2));
        assertTrue(e.getMessage().contains("ordinals 0..1"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> sim.cuda.device(-1));
    }

    @Test
    void zeroOrFailedAttributesFallBackToConservativeLimits() {
        FakeDriverApi gpu = new FakeDriverApi()
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK(), 0)
                .failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X())
                .failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK())
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN(), 1024)
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT(), -3)
                .failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE())
                .failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z())
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y(), 0);
        DeviceCapabilities c = new Simulated(gpu).cuda.device(0).capabilities();
        assertEquals(64, c.maxBlockDimZ());
        assertEquals(65_535, c.maxGridDimY());
        assertEquals(256, c.maxThreadsPerBlock());
        assertEquals(65_535, c.maxGridDimX());
        assertEquals(48 * 1024, c.sharedMemoryPerBlock());
        assertEquals(48 * 1024, c.sharedMemoryPerBlockOptIn(), "the opt-in ceiling never falls below the default");
        assertEquals(1, c.multiprocessorCount());
        assertEquals(0, c.l2CacheBytes(), "unknown L2 reads as 0: assume nothing");
    }

    @Property(tries = 200)
    void capabilitiesAreAlwaysLaunchable(@ForAll int threads, @ForAll int grid, @ForAll int shared, @ForAll int optIn,
            @ForAll int sms) {
        DeviceCapabilities c = DeviceCapabilities.fromReported(a -> switch (a) {
            case MAX_THREADS_PER_BLOCK -> threads;
            case MAX_GRID_DIM_X -> grid;
            case MAX_SHARED_MEMORY_PER_BLOCK -> shared;
            case MAX_SHARED_MEMORY_PER_BLOCK_OPTIN -> optIn;
            case MULTIPROCESSOR_COUNT -> sms;
            default -> -1;
        }, -5);
        assertTrue(c.maxThreadsPerBlock() > 0 && c.maxGridDimX() > 0 && c.multiprocessorCount() > 0);
        assertTrue(c.sharedMemoryPerBlock() > 0);
        assertTrue(c.sharedMemoryPerBlockOptIn() >= c.sharedMemoryPerBlock());
        assertEquals(0, c.totalMemoryBytes());
        if (threads > 0) {
            assertEquals(threads, c.maxThreadsPerBlock(), "a positive report is kept as is");
        }
    }

    @Test
    void thePrimaryContextIsRetainedOnceEvenAcrossContextRestarts() {
        Simulated sim = new Simulated();
        Device d = sim.cuda.device(0);
        CudaContext first = d.context();
        assertSame(first, d.context());
        first.close();
        CudaContext second = d.context();
        assertTrue(second != first);
        second.close();
        assertEquals(1, sim.gpu.primaryContextRetains());
    }
}
