package dev.gatun.cuda.cli;

import java.io.PrintStream;
import java.util.Arrays;
import org.openjdk.jmh.Main;

/**
 * The {@code gatun} command: {@code java -jar gatun.jar <command>}.
 *
 * <ul>
 *   <li>{@code doctor}: the driver, NVRTC and devices Gatun finds; exit 0 when a device is usable, 3 when none.
 *   <li>{@code bench [JMH options]}: runs the JMH benchmarks in this jar, e.g. {@code bench -prof gc Launch}.
 * </ul>
 */
public final class GatunCli {

    static final int EXIT_USAGE = 2;

    private GatunCli() {
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (args.length == 0) {
            usage(err);
            return EXIT_USAGE;
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "doctor":
                return Doctor.ofProcess().run(out);
            case "bench":
                Main.main(rest);
                return 0;
            case "help":
            case "--help":
            case "-h":
                usage(out);
                return 0;
            default:
                err.println("gatun: unknown command '" + args[0] + "'");
                usage(err);
                return EXIT_USAGE;
        }
    }

    private static void usage(PrintStream out) {
        out.println("usage: gatun <command>");
        out.println("  doctor            show the CUDA driver, NVRTC and devices Gatun finds (exit 3 when no device is usable)");
        out.println("  bench [options]   run the JMH benchmarks (JMH options, e.g. -prof gc)");
    }
}
