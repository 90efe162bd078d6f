package dev.gatun.cuda.internal.launch;

import dev.gatun.cuda.ClusterSchedulingPolicy;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.internal.driver.ModuleCalls;
import java.lang.foreign.MemorySegment;
import java.util.List;

/** The checks a launch passes before anything is submitted; each failure says what to change. */
public final class LaunchChecks {

    /** The largest cluster every sm_90 device supports without opting in to non-portable sizes. */
    private static final int PORTABLE_CLUSTER_BLOCKS = 8;

    private LaunchChecks() {
    }

    /**
     * The kernel a launch is checked against.
     *
     * @param who names the kernel and its device in messages, e.g. {@code kernel 'saxpy' on device 0}
     * @param device the device's limits
     * @param maxThreadsPerBlock the kernel's own limit (registers, or the device's)
     * @param registersPerThread the registers each of the kernel's threads uses, for the message
     *     that says why a block is too large
     * @param parameters the kernel's parameters, or null when the driver cannot tell (before CUDA 12.4)
     * @param modules layer 2's module calls, for the occupancy of a cooperative launch
     * @param function the kernel's {@code CUfunction}, whose module the caller holds
     * @param greatestPriority the context's highest stream priority (the smallest number), read
     *     once when the context opened; a launch priority must lie in greatest .. least
     * @param leastPriority the context's lowest stream priority (the largest number)
     */
    public record Target(String who, DeviceCapabilities device, int maxThreadsPerBlock, int registersPerThread,
            List<ModuleCalls.Parameter> parameters, ModuleCalls modules, MemorySegment function, int greatestPriority,
            int leastPriority) {
    }

    /**
     * Every launch, plain, cooperative or extended (clusters and launch attributes), is prepared through this one check
     * ({@code KernelLaunch}'s constructor), so no path reaches the driver unchecked.
     */
    public static void check(Target kernel, LaunchConfig c, KernelArg[] args) {
        String who = kernel.who();
        if (c == null) { // not requireNonNull with a message supplier: that lambda would allocate on every prepare
            throw new NullPointerException(who + ": the LaunchConfig is null; pass one, e.g. LaunchConfig.covering(n, 256)");
        }
        for (int i = 0; i < args.length; i++) {
            if (args[i] == null) {
                throw new NullPointerException(who + ": argument " + i + " is null; pass a KernelArg (for a "
                        + "deliberate NULL device pointer, KernelArg.address(0))");
            }
        }
        DeviceCapabilities caps = kernel.device();
        checkAxis(who, "block", 'x', c.blockX(), caps.maxBlockDimX());
        checkAxis(who, "block", 'y', c.blockY(), caps.maxBlockDimY());
        checkAxis(who, "block", 'z', c.blockZ(), caps.maxBlockDimZ());
        if (c.threadsPerBlock() > caps.maxThreadsPerBlock()) {
            throw new IllegalArgumentException(who + ": a block of " + c.threadsPerBlock() + " threads is more than the "
                    + caps.maxThreadsPerBlock() + " the device runs per block; use at most that many");
        }
        if (c.threadsPerBlock() > kernel.maxThreadsPerBlock()) {
            throw new IllegalArgumentException(who + ": a block of " + c.threadsPerBlock() + " threads is more than the "
                    + kernel.maxThreadsPerBlock() + " this kernel can run per block: it uses " + kernel.registersPerThread()
                    + " registers per thread, and a block's threads share one multiprocessor's registers. Use at most "
                    + kernel.maxThreadsPerBlock() + " threads per block, or compile the kernel for this block size "
                    + "(__launch_bounds__(" + c.threadsPerBlock() + ") or -maxrregcount), which caps its registers");
        }
        checkAxis(who, "grid", 'x', c.gridX(), caps.maxGridDimX());
        checkAxis(who, "grid", 'y', c.gridY(), caps.maxGridDimY());
        checkAxis(who, "grid", 'z', c.gridZ(), caps.maxGridDimZ());
        checkArguments(kernel.parameters(), args, who);
        if (c.isCooperative()) {
            // The caller holds the function's module.
            long fit = (long) kernel.modules().maxActiveBlocksPerMultiprocessor(kernel.function(),
                    (int) c.threadsPerBlock(), c.sharedMemoryBytes()) * caps.multiprocessorCount();
            if (c.blocks() > fit) {
                throw new IllegalArgumentException(who + ": a cooperative grid of " + c.blocks() + " blocks cannot be "
                        + "co-resident; at most " + fit + " blocks of " + c.threadsPerBlock() + " threads fit ("
                        + caps.multiprocessorCount() + " multiprocessors)");
            }
        }
        if (c.hasCluster()) {
            if (caps.computeMajor() < 9) {
                throw new IllegalArgumentException(who + ": thread-block clusters need compute capability 9.0 or newer, "
                        + "this device has " + caps.computeCapability());
            }
            if (c.gridX() % c.clusterX() != 0 || c.gridY() % c.clusterY() != 0 || c.gridZ() % c.clusterZ() != 0) {
                throw new IllegalArgumentException(who + ": the grid must be a whole number of clusters in every "
                        + "dimension: grid (" + c.gridX() + ", " + c.gridY() + ", " + c.gridZ() + "), cluster ("
                        + c.clusterX() + ", " + c.clusterY() + ", " + c.clusterZ() + ")");
            }
            long size = (long) c.clusterX() * c.clusterY() * c.clusterZ();
            if (size > PORTABLE_CLUSTER_BLOCKS) {
                throw new IllegalArgumentException(who + ": a cluster of " + size + " blocks is larger than the portable "
                        + PORTABLE_CLUSTER_BLOCKS);
            }
        }
        checkAttributes(kernel, c);
    }

    /**
     * The launch attributes beyond clusters: programmatic dependent launch and event, scheduling
     * policy, priority. (The events themselves, owners of the public API, are checked by the launch.)
     */
    private static void checkAttributes(Target kernel, LaunchConfig c) {
        String who = kernel.who();
        DeviceCapabilities caps = kernel.device();
        if (c.isProgrammaticStreamSerialization() && caps.computeMajor() < 9) {
            throw new IllegalArgumentException(who + ": programmatic dependent launch (programmatic stream "
                    + "serialization) needs compute capability 9.0 or newer, this device has " + caps.computeCapability()
                    + "; launch without withProgrammaticStreamSerialization(true) on this device");
        }
        if (c.programmaticEvent().isPresent() && caps.computeMajor() < 9) {
            throw new IllegalArgumentException(who + ": a programmatic event is part of programmatic dependent launch "
                    + "and needs compute capability 9.0 or newer, this device has " + caps.computeCapability()
                    + "; on this device use a launch completion event (withLaunchCompletionEvent) or record an "
                    + "event after the launch");
        }
        if (c.clusterSchedulingPolicy() != ClusterSchedulingPolicy.DEFAULT && !c.hasCluster()) {
            throw new IllegalArgumentException(who + ": the cluster scheduling policy " + c.clusterSchedulingPolicy()
                    + " applies to cluster launches only; add withCluster(x, y, z), or leave the policy DEFAULT");
        }
        if (c.priority().isPresent()) {
            int p = c.priority().getAsInt();
            if (p < kernel.greatestPriority() || p > kernel.leastPriority()) {
                throw new IllegalArgumentException(who + ": launch priority " + p + " is outside this context's range "
                        + kernel.greatestPriority() + " (highest) .. " + kernel.leastPriority() + " (lowest); lower "
                        + "numbers mean higher priority (CudaContext.greatestStreamPriority / leastStreamPriority)");
            }
        }
    }

    /** One dimension of the block or grid against the device's own limit for that axis. */
    private static void checkAxis(String who, String what, char axis, int value, int limit) {
        if (value > limit) {
            throw new IllegalArgumentException(who + ": " + what + " " + axis + " is " + value + ", more than the "
                    + limit + " this device allows in " + axis + "; spread the work over the other axes, or "
                    + (what.equals("grid") ? "use larger blocks or a grid-stride loop" : "use more blocks"));
        }
    }

    /** Count and sizes against cuFuncGetParamInfo, where the driver has it. */
    private static void checkArguments(List<ModuleCalls.Parameter> p, KernelArg[] args, String who) {
        if (p == null) {
            return;
        }
        if (p.size() != args.length) {
            throw new IllegalArgumentException(who + " takes " + p.size() + " parameters " + sizes(p) + ", but "
                    + args.length + " arguments were given");
        }
        for (int i = 0; i < args.length; i++) {
            if (p.get(i).size() != args[i].byteSize()) {
                throw new IllegalArgumentException(who + ": parameter " + i + " is " + p.get(i).size() + " bytes, but the "
                        + "argument given is a " + args[i].byteSize() + "-byte " + args[i].getClass().getSimpleName());
            }
        }
    }

    private static String sizes(List<ModuleCalls.Parameter> p) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < p.size(); i++) {
            sb.append(i == 0 ? "" : ", ").append(p.get(i).size()).append(" bytes");
        }
        return sb.append(')').toString();
    }
}
