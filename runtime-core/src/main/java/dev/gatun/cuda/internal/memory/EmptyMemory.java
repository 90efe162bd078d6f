package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;

/** No memory: the buffer of a 0-byte allocation, with no native allocation behind it and nothing to free. */
public final class EmptyMemory extends DeviceMemory {

    private EmptyMemory(ContextState context) {
        super(context, 0, 0, null);
    }

    /** A 0-byte buffer's memory. */
    public static EmptyMemory of(ContextState context) {
        return new EmptyMemory(context);
    }

    @Override
    protected boolean freeAtClose(StreamState soleStream, boolean countClose) {
        return true; // nothing was allocated, so nothing waits
    }

    @Override
    protected Retirement.Release howToFree() {
        return Retirement.Release.withoutDriver(() -> { });
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        return describe("empty");
    }
}
