package dev.gatun.cuda.testing;

import java.lang.foreign.MemorySegment;

/** One launch as a simulated kernel body sees it: the node it runs and the device memory it may touch. */
record SimulatedLaunch(SimulatedMemory memory, SimulatedConditionals conditionals, SimulatedModules.KernelNode node)
        implements FakeKernel.Launch {

    @Override
    public int gridX() {
        return node.gx();
    }

    @Override
    public int blockX() {
        return node.bx();
    }

    @Override
    public int sharedMemoryBytes() {
        return node.smem();
    }

    @Override
    public long pointer(int i) {
        return node.raw()[i];
    }

    @Override
    public int i32(int i) {
        return (int) node.raw()[i];
    }

    @Override
    public long i64(int i) {
        return node.raw()[i];
    }

    @Override
    public float f32(int i) {
        return Float.intBitsToFloat((int) node.raw()[i]);
    }

    @Override
    public double f64(int i) {
        return Double.longBitsToDouble(node.raw()[i]);
    }

    @Override
    public MemorySegment memory(long address, long bytes) {
        MemorySegment m = memory.resolve(address, bytes);
        if (m == null) {
            throw new IllegalStateException("simulated kernel touched unallocated device memory 0x" + Long.toHexString(address));
        }
        return m;
    }

    @Override
    public void setConditional(long handle, int value) {
        conditionals.set(handle, value);
    }
}
