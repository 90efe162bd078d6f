package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import java.lang.foreign.MemorySegment;

/**
 * Layer 2, kernel launches: plain, cooperative and extended ({@code cuLaunchKernelEx}, for
 * clusters and launch attributes). Each names its operation once and checks its result; a warmed launch allocates
 * nothing (the kernel's name is only joined into a message when the launch fails) and makes
 * exactly its one driver call: a launch names its stream and runs in the context of its
 * function and stream, whatever context is current (see DriverCalls).
 *
 * <p>With Gatun's NVTX ranges on ({@link AutomaticRanges#ON}, a constant: off, the JIT folds the
 * tests away), each launch is a range named by its kernel, around the driver call alone.
 *
 * <p>A failed launch may still have queued work: the caller treats its outcome as uncertain.
 */
public final class LaunchCalls {

    private static final String LAUNCH = "cuLaunchKernel";
    private static final String COOPERATIVE = "cuLaunchCooperativeKernel";
    private static final String EXTENDED = "cuLaunchKernelEx";

    private final Checked c;

    LaunchCalls(Checked c) {
        this.c = c;
    }

    /**
     * Queues {@code function} on {@code stream}.
     *
     * @param params the launch's {@code void**} block: one valid slot per kernel parameter
     * @param kernel the kernel's name, for the error message
     */
    public void launch(MemorySegment function, LaunchConfig config, MemorySegment stream, MemorySegment params,
            String kernel) {
        c.live(LAUNCH);
        // Safety: the caller's contract: function belongs to a module it retains; params has one
        // valid slot per parameter (count and sizes checked when the launch was prepared); every
        // device pointer in it belongs to an open allocation that lists this stream; the stream
        // is open and of this context.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.named(kernel));
        }
        int r = c.api.cuLaunchKernel(function, config.gridX(), config.gridY(), config.gridZ(), config.blockX(),
                config.blockY(), config.blockZ(), config.sharedMemoryBytes(), stream, params, MemorySegment.NULL);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        if (r != 0) {
            throw c.fail(r, LAUNCH + " of kernel '" + kernel + "'");
        }
    }

    /** {@link #launch} as a cooperative launch (all blocks co-resident; the caller checked the grid fits). */
    public void launchCooperative(MemorySegment function, LaunchConfig config, MemorySegment stream,
            MemorySegment params, String kernel) {
        c.live(COOPERATIVE);
        // Safety: as in launch.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.named(kernel));
        }
        int r = c.api.cuLaunchCooperativeKernel(function, config.gridX(), config.gridY(), config.gridZ(),
                config.blockX(), config.blockY(), config.blockZ(), config.sharedMemoryBytes(), stream, params);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        if (r != 0) {
            throw c.fail(r, COOPERATIVE + " of kernel '" + kernel + "'");
        }
    }

    /**
     * {@link #launch} through {@code cuLaunchKernelEx}.
     *
     * @param config a complete {@code CUlaunchConfig} (grid, block, shared memory, attributes)
     *     whose stream field names an open stream of this context
     */
    public void launchExtended(MemorySegment config, MemorySegment function, MemorySegment params, String kernel) {
        c.live(EXTENDED);
        // Safety: as in launch; config and its attribute array are alive for the call.
        if (AutomaticRanges.ON) {
            AutomaticRanges.push(AutomaticRanges.named(kernel));
        }
        int r = c.api.cuLaunchKernelEx(config, function, params, MemorySegment.NULL);
        if (AutomaticRanges.ON) {
            AutomaticRanges.pop();
        }
        if (r != 0) {
            throw c.fail(r, EXTENDED + " of kernel '" + kernel + "'");
        }
    }
}
