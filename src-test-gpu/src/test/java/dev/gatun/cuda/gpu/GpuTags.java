package dev.gatun.cuda.gpu;

/**
 * The JUnit tags of the GPU suite, each with the reason a run leaves its tests out. The bundle's
 * {@code run} and {@code sanitize} scripts name them by these strings; {@code GpuTagsTest} checks
 * that {@code sanitize} leaves out exactly the tags said here to be left out under each tool.
 */
final class GpuTags {

    /** About a minute of 8 threads: the plain {@code ./run} leaves it out, {@code ./stress} runs it. */
    static final String STRESS = "stress";

    /**
     * Multi-GiB kernels and copies, or the whole device filled: minutes under compute-sanitizer,
     * which also needs device memory of its own. Every sanitizer run leaves them out.
     */
    static final String LARGE = "large";

    /** A deliberate illegal-address fault in a child JVM, which every sanitizer would rightly report. */
    static final String FAULTS = "faults";

    /** The image fuzz: its corrupt code bytes crash the sanitizers' own instrumentation. */
    static final String CORRUPT_IMAGES = "corrupt-images";

    /**
     * Asserts that two pieces of GPU work ran at the same time, or measures how much they
     * overlapped: a long kernel that must not delay a short one on another green context, a copy
     * that must finish while a kernel on another stream still waits, consumer blocks that start
     * before their producer ends. Every compute-sanitizer tool serializes GPU work in its own way
     * (memcheck and synccheck serialize kernels, initcheck copies too), so these assertions test
     * the tool, not Gatun. Every sanitizer run leaves them out; the plain suite runs them.
     */
    static final String TIMING = "timing";

    /**
     * A kernel spins until the host writes a flag, and the host writes it only after the launch
     * (or a later call on the same thread) returned. Under initcheck a launch returns only once its
     * kernel has run: on the H100 (9e28154, 60 s per-test bound) the thread dump showed
     * {@code cuLaunchKernel} blocked under a kernel that waited for work the host had not queued
     * yet, and the suite stalled there. Such a kernel spins out its whole bound (about a minute,
     * longer under instrumentation) and the test's assertions about the wait no longer hold.
     * initcheck leaves them out; the other tools run them.
     */
    static final String HOST_RELEASED_KERNEL = "host-released-kernel";

    /**
     * A child JVM's kernel reads memory this JVM wrote: initcheck tracks initialization per
     * process and would report every element. initcheck leaves it out.
     */
    static final String WRITTEN_BY_ANOTHER_PROCESS = "written-by-another-process";

    /**
     * Checks the device's used or free memory: initcheck's shadow of device memory doubles it, and
     * GPU work of another process beside it (another tool, the stress test) moves it. initcheck
     * leaves it out, and so does every tool under GATUN_SANITIZE_ALONGSIDE=1 (memcheck beside
     * racecheck and initcheck failed {@code GrowableBufferGpuTest}'s check that the chunks came
     * back: free memory fell by 83 MiB that the other processes took).
     */
    static final String MEASURES_DEVICE_MEMORY = "measures-device-memory";

    /**
     * initcheck itself fails here, on the H100 (driver 580.159.04), while memcheck, racecheck and
     * synccheck run the same tests with 0 errors and the plain suite passes them.
     * {@code VirtualThreadsGpuTest}: the JVM died twice with SIGSEGV at a garbage address in
     * libcuda.so.1, called from initcheck's libsanitizer-collection.so in its interception of
     * {@code cuMemAllocAsync} (1,000 virtual threads allocating on the primary and two green
     * contexts; 13 s and 86 s into the run). {@code probes/initcheck-alloc-async} isolates it
     * without a JVM: a C program's stream-ordered allocations end in SIGSEGV under initcheck
     * whenever a green context is current (one thread or sixteen), and run clean on the primary
     * context alone.
     * {@code StreamMemOpsGpuTest.aBatchNodeWritesItsWordsAfterTheKernelItDependsOn}:
     * {@code cuGraphLaunch} of a graph whose batch memory-operation node waits for a word the same
     * node wrote never returned (thread dump at the 180 s bound). initcheck leaves them out.
     */
    static final String BREAKS_INITCHECK = "breaks-initcheck";

    /**
     * Needs the driver to write a GPU coredump, which the lent H200 and H100 machines never do
     * (runtime-core README, "GPU coredumps on sticky errors"): {@code ./run} leaves it out unless
     * GATUN_COREDUMP_TESTS is set.
     */
    static final String WRITES_GPU_COREDUMP = "writes-gpu-coredump";

    private GpuTags() {
    }
}
