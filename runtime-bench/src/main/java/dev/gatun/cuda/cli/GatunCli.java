package dev.gatun.cuda.cli;

import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.doctor.Doctor;
import java.io.IOException;
import java.io.PrintStream;
import java.util.Arrays;

/**
 * The {@code gatun} command: {@code java -jar gatun.jar <command>}.
 *
 * <ul>
 *   <li>{@code doctor}: the versions, the driver, NVRTC, devices and settings Gatun finds
 *       (gatun-core's {@link Doctor#diagnose}, which applications can print too); exit 0 when a
 *       device is usable and the settings work, 3 when no device is usable, 4 when a setting needs
 *       attention ({@link dev.gatun.cuda.doctor.Diagnosis#exitStatus()}).
 *   <li>{@code bench [JMH options]}: runs the JMH benchmarks in this jar, e.g.
 *       {@code bench -prof gc Launch}; exit 1 when a benchmark failed, 3 without a usable device.
 *   <li>{@code --version}: Gatun's version.
 * </ul>
 *
 * Anything else, or an argument a command does not take, is a usage error (exit 2).
 */
public final class GatunCli {

    static final int EXIT_USAGE = 2;

    private GatunCli() {
    }

    public static void main(String[] args) throws IOException {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
        if (args.length == 0) {
            usage(err);
            return EXIT_USAGE;
        }
        String command = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "bench":
                return Bench.ofProcess().run(rest, out, err);
            case "doctor":
            case "--version":
            case "help":
            case "--help":
            case "-h":
                break;
            default:
                err.println("gatun: unknown command '" + command + "'");
                usage(err);
                return EXIT_USAGE;
        }
        if (rest.length > 0) {
            err.println("gatun " + command + ": unknown argument '" + rest[0] + "'");
            usage(err);
            return EXIT_USAGE;
        }
        switch (command) {
            case "doctor":
                return Doctor.diagnose(out).exitStatus();
            case "--version":
                out.println("gatun " + Gatun.version());
                return 0;
            default:
                usage(out);
                return 0;
        }
    }

    static void usage(PrintStream out) {
        out.println("usage: gatun <command>");
        out.println("  doctor            show the versions, CUDA driver, NVRTC, devices and settings Gatun finds");
        out.println("                    (exit 3 when no device is usable, exit 4 when a setting needs attention)");
        out.println("  bench [options]   run the JMH benchmarks (JMH options, e.g. -prof gc; -h lists them)");
        out.println("                    (exit 1 when a benchmark fails, exit 3 when no device is usable)");
        out.println("  --version         print Gatun's version");
        out.println("  help              print this text");
    }
}
