package dev.gatun.cuda.internal.image;

/**
 * What is wrong with an image's bytes, in words. Checked, so that every caller turns it into
 * the public exception that names the image; it carries no stack trace of its own, since that
 * exception is the one a user sees.
 */
public final class ImageFormatException extends Exception {
    private static final long serialVersionUID = 1L;

    public ImageFormatException(String problem) {
        super(problem, null, false, false);
    }
}
