package dev.gatun.cuda.cli;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.GatunException;
import dev.gatun.cuda.doctor.Diagnosis;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Supplier;
import org.openjdk.jmh.Main;
import org.openjdk.jmh.runner.Defaults;
import org.openjdk.jmh.runner.NoBenchmarksException;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.format.OutputFormat;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;

/**
 * {@code gatun bench [JMH options]}: runs the JMH benchmarks in this jar through JMH's
 * {@link Runner}, and fails when any of them failed. JMH's own {@code Main} prints a failed
 * benchmark as {@code <failure>}, goes on, and exits 0 even when every benchmark failed; here the
 * run exits {@link #EXIT_FAILED} naming the failures, or {@link Diagnosis#EXIT_NO_DEVICE} before
 * starting when there is no device to run on.
 */
final class Bench {

    static final int EXIT_FAILED = 1;

    /** Runs the benchmarks the options select, reporting to the format: JMH, or a test's stand-in. */
    @FunctionalInterface
    interface Runs {
        void run(Options options, OutputFormat format) throws RunnerException;
    }

    private final Supplier<Cuda> driver;
    private final Runs runs;

    Bench(Supplier<Cuda> driver, Runs runs) {
        this.driver = driver;
        this.runs = runs;
    }

    static Bench ofProcess() {
        return new Bench(Cuda::system, (options, format) -> new Runner(options, format).run());
    }

    int run(String[] args, PrintStream out, PrintStream err) throws IOException {
        CommandLineOptions options;
        try {
            options = new CommandLineOptions(args);
        } catch (CommandLineOptionException e) {
            err.println("gatun bench: " + e.getMessage());
            GatunCli.usage(err);
            return GatunCli.EXIT_USAGE;
        }
        if (options.shouldHelp() || options.shouldList() || options.shouldListWithParams()
                || options.shouldListProfilers() || options.shouldListResultFormats()) {
            // Help and the lists need no device, and JMH prints them as it always has.
            Main.main(args);
            return 0;
        }
        String noDevice = noDevice();
        if (noDevice != null) {
            err.println("gatun bench: no usable CUDA device, and every benchmark needs one "
                    + "(`gatun doctor` says what Gatun finds on this machine):");
            err.println("  " + noDevice.replace("\n", "\n  "));
            return Diagnosis.EXIT_NO_DEVICE;
        }
        return measure(options, out, err);
    }

    /** Why no benchmark can run here, or null when a device is there. */
    private String noDevice() {
        try {
            int count = driver.get().deviceCount();
            return count == 0 ? "the driver reports no device" : null;
        } catch (GatunException e) {
            return e.getMessage();
        }
    }

    private int measure(CommandLineOptions options, PrintStream out, PrintStream err) throws IOException {
        // What Runner does with its own format, kept: -o sends the report to a file.
        PrintStream report = options.getOutput().hasValue()
                ? new PrintStream(new FileOutputStream(options.getOutput().get()), true, StandardCharsets.UTF_8)
                : out;
        BenchmarkTally tally = new BenchmarkTally(
                OutputFormatFactory.createFormatInstance(report, options.verbosity().orElse(Defaults.VERBOSITY)));
        try {
            runs.run(options, tally);
        } catch (NoBenchmarksException e) {
            err.println("gatun bench: no benchmark matches " + options.getIncludes() + "; `gatun bench -l` lists them");
            return GatunCli.EXIT_USAGE;
        } catch (RunnerException e) {
            err.println("gatun bench: JMH stopped the run: " + e.getMessage());
            return EXIT_FAILED;
        } finally {
            report.flush();
            if (report != out) {
                report.close();
            }
        }
        List<String> failures = tally.failures();
        if (!failures.isEmpty()) {
            err.println("gatun bench: " + failures.size() + " of " + tally.started()
                    + " benchmarks failed (JMH printed each <failure> above):");
            failures.forEach(name -> err.println("  " + name));
            return EXIT_FAILED;
        }
        return 0;
    }
}
