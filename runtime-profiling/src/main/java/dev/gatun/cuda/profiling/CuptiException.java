package dev.gatun.cuda.profiling;

import dev.gatun.cuda.GatunException;

/** A CUPTI call failed: its name and the {@code CUptiResult} it returned, and what to do. */
public final class CuptiException extends GatunException {

    /** The CUptiResult CUPTI returned. */
    private final int result;

    CuptiException(String call, int result, String advice) {
        super(call + " returned CUptiResult " + result + advice);
        this.result = result;
    }

    /** {@return the {@code CUptiResult} (cupti_result.h)} */
    public int result() {
        return result;
    }
}
