package dev.gatun.cuda.cli;

import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * gatun.jar's entry point, compiled for Java 8 (its own compiler execution in runtime-bench's
 * pom) so that any java can load it. On a Java older than {@value #REQUIRED} it says so in one
 * line and exits {@value #EXIT_OLD_JAVA}, where the JVM would otherwise stop with an
 * {@code UnsupportedClassVersionError} naming a class file version; on {@value #REQUIRED} or newer
 * it runs {@code GatunCli}, which is compiled for {@value #REQUIRED} and so is only named here,
 * never linked.
 */
public final class Launcher {

    /** The Java feature release Gatun needs (the FFM API as Gatun uses it). */
    static final int REQUIRED = 25;

    /** The exit status on an older Java. */
    static final int EXIT_OLD_JAVA = 1;

    private Launcher() {
    }

    public static void main(String[] args) throws Throwable {
        int refused = refuseOldJava(System.getProperty("java.specification.version", ""),
                System.getProperty("java.home", "?"), System.err);
        if (refused != 0) {
            System.exit(refused);
        }
        Method main = Class.forName("dev.gatun.cuda.cli.GatunCli").getMethod("main", String[].class);
        try {
            main.invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause(); // GatunCli's own failure, not the reflection's wrapper
        }
    }

    /**
     * 0 when {@code specification} (a {@code java.specification.version}: "1.8", "17", "25") is
     * {@value #REQUIRED} or newer; else prints one line to {@code err} that names the Java found
     * and the one needed, and returns {@value #EXIT_OLD_JAVA}.
     */
    static int refuseOldJava(String specification, String javaHome, PrintStream err) {
        if (feature(specification) >= REQUIRED) {
            return 0;
        }
        err.println("gatun.jar needs Java " + REQUIRED + " or newer, and this is Java " + specification + " ("
                + javaHome + "): run it with a JDK " + REQUIRED + ", e.g. $JAVA_HOME/bin/java -jar gatun.jar, "
                + "with JAVA_HOME a JDK " + REQUIRED + ".");
        return EXIT_OLD_JAVA;
    }

    /** The feature release of a specification version: 8 for "1.8", 17 for "17"; 0 when unreadable. */
    static int feature(String specification) {
        String s = specification.startsWith("1.") ? specification.substring(2) : specification;
        int end = 0;
        while (end < s.length() && Character.isDigit(s.charAt(end))) {
            end++;
        }
        return end == 0 ? 0 : Integer.parseInt(s.substring(0, end));
    }
}
