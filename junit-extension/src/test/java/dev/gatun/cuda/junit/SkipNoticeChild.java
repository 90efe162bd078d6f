package dev.gatun.cuda.junit;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The child JVM of {@link SkipNoticeTest}: runs fixture classes without a GPU, each in an engine
 * run of its own, as Surefire runs test classes in one JVM, then prints what they wrote to
 * standard error ({@code stderr| } lines) and each outcome ({@code outcome| } lines).
 *
 * <pre>SkipNoticeChild no-driver|no-device|cuinit-no-device [required]</pre>
 */
public final class SkipNoticeChild {

    private SkipNoticeChild() {
    }

    public static void main(String[] args) {
        String[] required = args.length > 1 ? new String[] {GpuExtension.REQUIRED_PARAMETER, "true"} : new String[0];
        PrintStream err = System.err;
        ByteArrayOutputStream written = new ByteArrayOutputStream();
        System.setErr(new PrintStream(written, true, StandardCharsets.UTF_8));
        List<FixtureRun.Outcome> outcomes = new ArrayList<>();
        try {
            switch (args[0]) {
                case "no-driver" -> {
                    outcomes.add(FixtureRun.withoutGpu(GpuConditionTest.NeedsAGpu.class, required).of("NeedsAGpu"));
                    outcomes.add(FixtureRun.withoutGpu(GpuConditionTest.NeedsAGpu.class, required).of("NeedsAGpu"));
                    outcomes.add(FixtureRun.withoutGpu(GpuConditionTest.OneTestNeedsAGpu.class, required).of("needsAGpu"));
                }
                case "no-device" -> {
                    SimulatedGpu.use(new Simulated(new FakeDriverApi().deviceCount(0)));
                    outcomes.add(FixtureRun.simulated(GpuConditionTest.NeedsAGpu.class, required).of("NeedsAGpu"));
                }
                case "cuinit-no-device" -> outcomes.add(FixtureRun.run(GpuConditionTest.NeedsAGpu.class,
                        GpuExtension.CUDA_SUPPLIER_PARAMETER, NoVisibleDevice.class.getName(), required).of("NeedsAGpu"));
                default -> throw new IllegalArgumentException("unknown case " + args[0]);
            }
        } finally {
            System.setErr(err);
        }
        written.toString(StandardCharsets.UTF_8).lines().forEach(line -> System.out.println("stderr| " + line));
        for (FixtureRun.Outcome o : outcomes) {
            String why = o.reason() != null ? o.reason() : o.failure().replace('\n', '|');
            System.out.println("outcome| " + o.status() + " | " + why);
        }
    }
}
