package dev.gatun.cuda.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class LauncherTest {

    @Test
    void specificationVersionsOfEveryEraReadAsTheirFeatureRelease() {
        assertEquals(8, Launcher.feature("1.8"));
        assertEquals(17, Launcher.feature("17"));
        assertEquals(25, Launcher.feature("25"));
        assertEquals(26, Launcher.feature("26-ea"));
        assertEquals(0, Launcher.feature(""), "unreadable: refused, never run");
    }

    @Test
    void anOlderJavaGetsOneLineNamingItAndTheJavaNeeded() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Launcher.refuseOldJava("17", "/usr/lib/jvm/java-17", new PrintStream(err, true, StandardCharsets.UTF_8));
        String said = err.toString(StandardCharsets.UTF_8);
        assertEquals(Launcher.EXIT_OLD_JAVA, status);
        assertEquals(1, said.lines().count(), said);
        assertTrue(said.startsWith("gatun.jar needs Java 25 or newer, and this is Java 17 (/usr/lib/jvm/java-17)"), said);
    }

    @Test
    void java25AndNewerRunWithoutAWord() {
        for (String version : new String[] {"25", "26"}) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(0, Launcher.refuseOldJava(version, "/jdk", new PrintStream(err, true, StandardCharsets.UTF_8)));
            assertEquals("", err.toString(StandardCharsets.UTF_8));
        }
    }
}
