package dev.gatun.cuda.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/** Runs code under a JFR recording of every Gatun event ("dev.gatun.*") and returns what it recorded. */
public final class FlightRecording {

    /** Every event runtime-core defines (dev.gatun.cuda.internal.events). */
    public static final List<String> NAMES = List.of("dev.gatun.ModuleLoad", "dev.gatun.NvrtcCompile",
            "dev.gatun.GraphCapture", "dev.gatun.GraphInstantiate", "dev.gatun.GraphUpdate", "dev.gatun.SynchronousCopy",
            "dev.gatun.RetirementBacklog", "dev.gatun.PoolMiss", "dev.gatun.ContextPoisoned",
            "dev.gatun.DriverLog", "dev.gatun.GraphInstall");

    private FlightRecording() {
    }

    /** The Gatun events {@code work} emitted, in order. */
    public static List<RecordedEvent> of(Runnable work) {
        Path file = null;
        try (Recording recording = new Recording()) {
            for (String name : NAMES) {
                recording.enable(name).withoutThreshold(); // by name: a type registers only when its class loads
            }
            recording.start();
            work.run();
            recording.stop();
            file = Files.createTempFile("gatun-events", ".jfr");
            recording.dump(file);
            return RecordingFile.readAllEvents(file).stream().filter(e -> e.getEventType().getName().startsWith("dev.gatun."))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (file != null) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
    }

    /** The events named {@code name} ("dev.gatun.ModuleLoad"). */
    public static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }
}
