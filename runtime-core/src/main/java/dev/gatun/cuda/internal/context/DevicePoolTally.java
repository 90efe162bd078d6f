package dev.gatun.cuda.internal.context;

/**
 * What the context's device pool counts of its own driver calls, which the context's counters
 * report ({@link ContextStats#attach}): the pool counts each {@code cuMemAlloc} and
 * {@code cuMemFree} and the bytes it holds from the driver once, for its caps and its own
 * counters, so the context does not count them a second time on the allocation path.
 */
public interface DevicePoolTally {

    /** No pool (a context state without one, as in tests): nothing counted. */
    DevicePoolTally NONE = new DevicePoolTally() {
        @Override
        public long driverAllocations() {
            return 0;
        }

        @Override
        public long driverFrees() {
            return 0;
        }

        @Override
        public long driverBytes() {
            return 0;
        }

        @Override
        public long retainedBytes() {
            return 0;
        }
    };

    /** {@return the pool's {@code cuMemAlloc} calls that succeeded} */
    long driverAllocations();

    /** {@return the pool's {@code cuMemFree} calls that succeeded} */
    long driverFrees();

    /** {@return the bytes the pool holds from the driver now: handed out, or retained} */
    long driverBytes();

    /** {@return of those, the bytes retained in its free lists for reuse, which no owner holds} */
    long retainedBytes();
}
