package dev.gatun.cuda.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.doctor.Doctor;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class GatunCliTest {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int cli(String... args) throws Exception {
        return GatunCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void versionPrintsGatunsVersion() throws Exception {
        assertEquals(0, cli("--version"), err());
        assertEquals("gatun " + Gatun.version() + System.lineSeparator(), out());
    }

    @Test
    void unknownCommandsPrintUsage() throws Exception {
        assertEquals(GatunCli.EXIT_USAGE, cli("frobnicate"));
        assertTrue(err().contains("unknown command 'frobnicate'"), err());
        assertTrue(err().contains("usage: gatun <command>"), err());
    }

    @Test
    void doctorRejectsArguments() throws Exception {
        assertEquals(GatunCli.EXIT_USAGE, cli("doctor", "--verbose"));
        assertTrue(err().contains("gatun doctor: unknown argument '--verbose'"), err());
        assertTrue(err().contains("usage: gatun <command>"), err());
        assertEquals("", out(), "doctor did not run");
    }

    @Test
    void versionAndHelpRejectArguments() throws Exception {
        assertEquals(GatunCli.EXIT_USAGE, cli("--version", "x"));
        assertTrue(err().contains("gatun --version: unknown argument 'x'"), err());
        assertEquals(GatunCli.EXIT_USAGE, cli("help", "doctor"));
        assertTrue(err().contains("gatun help: unknown argument 'doctor'"), err());
        assertEquals("", out());
    }

    @Test
    void helpPrintsEveryCommandAndExitCode() throws Exception {
        assertEquals(0, cli("--help"));
        for (String text : new String[] {"doctor", "bench", "--version", "exit 3", "exit 4"}) {
            assertTrue(out().contains(text), text + " in " + out());
        }
    }

    @Test
    void doctorPrintsGatunCoresReportAndExitsWithItsVerdict() throws Exception {
        StringBuilder library = new StringBuilder();
        int expected = Doctor.diagnose(library).exitStatus();
        assertEquals(expected, cli("doctor"), err());
        assertEquals(library.toString(), out(), "the command prints what Doctor.diagnose writes, line for line");
        assertTrue(out().startsWith("Gatun doctor" + System.lineSeparator()), out());
        assertEquals("", err());
    }
}
