package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;

/**
 * Another library's device memory in this process ({@code DeviceBuffer.borrow}),
 * which the caller validated as one range of an allocation of this context: used like any other,
 * but its retirement, after Gatun's work on it completed, releases nothing; its owner frees it.
 */
public final class Borrowed extends DeviceMemory {

    private Borrowed(ContextState context, long address, long bytes) {
        super(context, address, bytes, null);
    }

    /** A view of {@code bytes} at {@code address}, checked by the caller to lie inside one allocation of {@code context}. */
    public static Borrowed of(ContextState context, long address, long bytes) {
        return new Borrowed(context, address, bytes);
    }

    @Override
    public boolean borrowed() {
        return true;
    }

    @Override
    protected Retirement.Release howToFree() {
        return Retirement.Release.withoutDriver(() -> { }); // only Gatun's view ends
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        return describe("borrowed");
    }
}
