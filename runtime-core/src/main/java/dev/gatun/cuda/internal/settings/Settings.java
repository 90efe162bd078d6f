package dev.gatun.cuda.internal.settings;

import java.util.Locale;

/**
 * How Gatun reads the values of its settings (system properties, environment variables, JUnit
 * configuration parameters), in one place, so that every setting of a kind accepts the same
 * values and refuses the rest with the same message. A value that means nothing is an
 * {@link IllegalArgumentException} naming the setting, the value and what is accepted: never a
 * silent default, since a misspelt switch that quietly turns something off (leak tracking, a
 * required GPU) is worse than a failure.
 */
public final class Settings {

    private Settings() {
    }

    /**
     * A yes/no setting: {@code true} or {@code false}, in any case, surrounding blanks ignored.
     *
     * @param setting what the value came from, for the message, e.g. {@code "system property gatun.leakTracking"}
     * @param value the value; null when the setting is unset
     * @param unset what an unset setting means
     * @throws IllegalArgumentException for any other value, the empty one included ({@code -Dname}
     *     alone sets the empty string, which means neither)
     */
    public static boolean flag(String setting, String value, boolean unset) {
        if (value == null) {
            return unset;
        }
        return switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(setting + " is '" + value + "'; set it to true or false "
                    + "(any case), or leave it unset for " + unset);
        };
    }

    /**
     * A number of bytes: a whole number from {@code min} to {@code max}, surrounding blanks ignored.
     *
     * @param setting what the value came from, for the message
     * @param value the value; null when the setting is unset
     * @param unset what an unset setting means
     * @param advice what the message says after the accepted range, e.g. {@code ", or 0 to disable pooling"}
     * @throws IllegalArgumentException for anything else
     */
    public static long bytes(String setting, String value, long unset, long min, long max, String advice) {
        if (value == null) {
            return unset;
        }
        long bytes;
        try {
            bytes = Long.parseLong(value.strip());
        } catch (NumberFormatException e) {
            bytes = min - 1;
        }
        if (bytes < min || bytes > max) {
            String range = max < Long.MAX_VALUE ? " from " + min + " to " + max : min > 0 ? " of at least " + min : "";
            throw new IllegalArgumentException(setting + " is '" + value + "'; set it to a whole number of bytes" + range
                    + advice);
        }
        return bytes;
    }
}
