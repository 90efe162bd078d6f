package dev.gatun.cuda;

/**
 * A launch configuration or argument list that cannot work on this kernel and device (too many
 * threads, too much shared memory, a cooperative grid larger than can be co-resident, a wrong
 * number or size of arguments, ...). Thrown before anything is submitted.
 */
public final class InvalidLaunchException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidLaunchException(String message) {
        super(message);
    }
}
