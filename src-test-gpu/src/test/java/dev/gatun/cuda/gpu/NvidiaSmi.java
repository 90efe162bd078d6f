package dev.gatun.cuda.gpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What {@code nvidia-smi} reports about the GPUs: an independent view (NVML, not the CUDA
 * driver API) to check Gatun's device queries against.
 */
final class NvidiaSmi {

    /** One GPU, one CSV row. Memory in MiB; reserved is what the driver and firmware keep. */
    record Gpu(int index, String name, String computeCapability, PciBusId pciBusId, long memoryTotalMiB,
            long memoryReservedMiB) {
    }

    static final List<String> COMMAND = List.of("nvidia-smi",
            "--query-gpu=index,name,compute_cap,pci.bus_id,memory.total,memory.reserved",
            "--format=csv,noheader,nounits");

    /** A hung nvidia-smi (a wedged driver) must fail the test, not hang the suite. */
    private static final long TIMEOUT_SECONDS = 120;

    private NvidiaSmi() {
    }

    /**
     * Runs {@link #COMMAND} and parses its rows.
     *
     * @throws IOException when nvidia-smi cannot be started, exits non-zero or does not finish
     */
    static List<Gpu> query() throws IOException, InterruptedException {
        // Output goes to a file, not a pipe, so that the wait below is bounded even when
        // nvidia-smi hangs with its output open.
        Path output = Files.createTempFile("gatun-nvidia-smi", ".csv");
        try {
            Process process = new ProcessBuilder(COMMAND).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", COMMAND) + " did not finish in " + TIMEOUT_SECONDS + " s");
            }
            String text = Files.readString(output);
            if (process.exitValue() != 0) {
                throw new IOException(String.join(" ", COMMAND) + " exited with " + process.exitValue() + ":\n" + text);
            }
            return parse(text);
        } finally {
            Files.delete(output);
        }
    }

    /**
     * Parses {@code --format=csv,noheader,nounits} output of {@link #COMMAND}.
     *
     * @throws IllegalArgumentException on a row that is not six fields of the expected types
     */
    static List<Gpu> parse(String csv) {
        List<Gpu> gpus = new ArrayList<>();
        for (String line : csv.strip().lines().toList()) {
            String[] f = line.split(",", -1);
            if (f.length != 6) {
                throw new IllegalArgumentException("expected 6 fields from nvidia-smi, got " + f.length + ": \"" + line + "\"");
            }
            try {
                gpus.add(new Gpu(Integer.parseInt(f[0].strip()), f[1].strip(), f[2].strip(), PciBusId.parse(f[3]),
                        Long.parseLong(f[4].strip()), Long.parseLong(f[5].strip())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("unexpected nvidia-smi row: \"" + line + "\"", e);
            }
        }
        return gpus;
    }
}
