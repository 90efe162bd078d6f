package dev.gatun.cuda;

import dev.gatun.cuda.internal.settings.Settings;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Facts about this copy of Gatun, and how it reads its settings. */
public final class Gatun {

    /** Written by Maven's resource filtering when the jar is built. */
    static final String VERSION_RESOURCE = "gatun.properties";

    private static final String VERSION = versionIn(Gatun.class.getResourceAsStream(VERSION_RESOURCE));

    private Gatun() {
    }

    /**
     * {@return the version of Gatun this jar was built as, e.g. {@code 0.1.0}, or {@code 0.1.0-SNAPSHOT}
     * for a build between releases: the Maven project version, recorded at build time}
     *
     * @throws IllegalStateException when this copy was compiled without Maven's resource
     *     filtering (some IDE builds), so it does not know its version; build it with Maven
     */
    public static String version() {
        if (VERSION == null) {
            throw new IllegalStateException("this copy of Gatun does not know its version: its "
                    + VERSION_RESOURCE + " is missing or was not filled in by Maven's resource filtering; "
                    + "build it with Maven (mvn package) or use a released jar");
        }
        return VERSION;
    }

    /**
     * Reads a yes/no setting as Gatun reads its own ({@code gatun.leakTracking} and the others):
     * {@code true} or {@code false}, in any case, surrounding blanks ignored. For code built on
     * Gatun that has switches of its own (gatun-junit's {@code gatun.gpu.required}), so that they
     * accept and refuse the same values with the same message: a misspelt switch fails instead of
     * quietly meaning its default.
     *
     * @param setting what the value came from, for the message, e.g.
     *     {@code "system property gatun.gpu.required"}
     * @param value the value; null when the setting is unset
     * @param unset what an unset setting means
     * @return the setting's value
     * @throws IllegalArgumentException for any other value, the empty one included ({@code -Dname}
     *     alone sets the empty string, which means neither), naming the setting, the value and
     *     what is accepted
     */
    public static boolean readFlag(String setting, String value, boolean unset) {
        return Settings.flag(setting, value, unset);
    }

    /**
     * The version the resource records, or null when it is missing or was not filtered (the
     * placeholder is still there). Never throws: it runs in the class initializer, and a failure
     * there would surface as an ExceptionInInitializerError.
     */
    static String versionIn(InputStream resource) {
        if (resource == null) {
            return null;
        }
        Properties properties = new Properties();
        try (resource) {
            properties.load(resource);
        } catch (IOException | IllegalArgumentException e) {
            return null;
        }
        String version = properties.getProperty("version", "").strip();
        return version.isEmpty() || version.contains("${") ? null : version;
    }
}
