package dev.gatun.cuda.gpu.load;

import java.nio.file.Path;

/**
 * What a soak run does, from its command line ({@code --name value} pairs, all optional).
 *
 * @param cycles allocate/close cycles at least ({@code --cycles}, default 1,000,000)
 * @param launches kernel launches with argument updates at least ({@code --launches}, default 1,000,000)
 * @param seconds the run lasts at least this long, repeating the work ({@code --seconds}, default 300)
 * @param sampleSeconds the sampling period ({@code --sample-seconds}, default 10)
 * @param warmupSeconds samples before this are left out of the slopes ({@code --warmup-seconds}, default 60)
 * @param out where soak.csv and soak.svg go ({@code --out}, default $OUT or the working folder)
 */
public record SoakOptions(long cycles, long launches, double seconds, double sampleSeconds, double warmupSeconds, Path out) {

    public SoakOptions {
        if (cycles < 0 || launches < 0 || !(seconds >= 0) || !(sampleSeconds > 0) || !(warmupSeconds >= 0)) {
            throw new IllegalArgumentException("counts and times must be >= 0 and the sampling period > 0; got cycles="
                    + cycles + " launches=" + launches + " seconds=" + seconds + " sample-seconds=" + sampleSeconds
                    + " warmup-seconds=" + warmupSeconds);
        }
    }

    /**
     * @param defaultOut the folder used when {@code --out} is not given
     * @throws IllegalArgumentException for an unknown option, a missing value or a value that is not a number
     */
    public static SoakOptions parse(String[] args, Path defaultOut) {
        long cycles = 1_000_000;
        long launches = 1_000_000;
        double seconds = 300;
        double sampleSeconds = 10;
        double warmupSeconds = 60;
        Path out = defaultOut;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + args[i] + " needs a value");
            }
            String value = args[i + 1];
            try {
                switch (args[i]) {
                    case "--cycles" -> cycles = Long.parseLong(value);
                    case "--launches" -> launches = Long.parseLong(value);
                    case "--seconds" -> seconds = Double.parseDouble(value);
                    case "--sample-seconds" -> sampleSeconds = Double.parseDouble(value);
                    case "--warmup-seconds" -> warmupSeconds = Double.parseDouble(value);
                    case "--out" -> out = Path.of(value);
                    default -> throw new IllegalArgumentException("unknown option " + args[i] + "; known: --cycles, "
                            + "--launches, --seconds, --sample-seconds, --warmup-seconds, --out");
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("option " + args[i] + " needs a number, got '" + value + "'", e);
            }
        }
        return new SoakOptions(cycles, launches, seconds, sampleSeconds, warmupSeconds, out);
    }
}
