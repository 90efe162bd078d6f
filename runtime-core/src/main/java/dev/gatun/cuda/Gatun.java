package dev.gatun.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Facts about this copy of Gatun. */
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
