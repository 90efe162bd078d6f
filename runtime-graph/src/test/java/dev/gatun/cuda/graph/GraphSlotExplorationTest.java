package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Every order (within two preemptions) of the driver calls of a replay of a slot and an update
 * of one of its kernel nodes on another thread, with runtime-core's {@link ScheduleExplorer}: the
 * simulated driver flags an executable changed while a launch of it is inside the driver.
 */
class GraphSlotExplorationTest {

    private static final LaunchConfig FOUR = LaunchConfig.of(1, 4);

    @Test
    @Tag("protocol-fix")
    void updateAndReplay(TestReporter reporter) {
        ScheduleExplorer.Report report = ScheduleExplorer.of("kernel node update || replay").explore(() -> {
            Interposer interposer = Interposer.over(new FakeDriverApi());
            Simulated sim = new Simulated(interposer);
            CudaContext ctx = sim.context();
            sim.gpu.kernelBody("add", FakeKernel.ADD);
            ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
            CudaGraphs graphs = CudaGraphs.create(ctx);
            Stream stream = ctx.createStream();
            Kernel add = ctx.modules().kernel("m", "add");
            DeviceBuffer a = ctx.allocate(16);
            DeviceBuffer c = ctx.allocate(16);
            GraphSlot slot = graphs.registerGroup("o").slot("s");
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            KernelLaunch intoC = add.prepare(FOUR, KernelArg.pointer(c), KernelArg.i32(4), KernelArg.i32(7));
            return ScheduleExplorer.Run.of(interposer,
                    List.of(new Step("T1", () -> slot.replay(stream)),
                            new Step("T2", () -> slot.updateKernelArguments(0, 0, intoC))),
                    failures -> {
                        assertEquals(List.of(), failures.stream().filter(t -> t != null).toList(), "a step threw");
                        ctx.synchronize();
                        assertEquals(List.of(), sim.gpu.violations(), "the simulated driver saw misuse");
                    }, () -> {
                        slot.reset();
                        graphs.close();
                        add.close();
                        a.close();
                        c.close();
                        stream.close();
                        ctx.synchronize();
                        ctx.close();
                    });
        });
        reporter.publishEntry("schedules", report.toString());
    }
}
