package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.driver.DriverFeature;
import dev.gatun.cuda.internal.driver.LaunchCalls;
import dev.gatun.cuda.internal.launch.LaunchChecks;
import dev.gatun.cuda.internal.launch.LaunchExConfig;
import dev.gatun.cuda.internal.launch.ParamBlock;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A prepared launch of one kernel: configuration and native argument block, checked and built
 * once by {@link Kernel#prepare}. {@link #launch(Stream)} then submits it with no Java
 * allocation; the {@code set*} methods update an argument in place between launches.
 *
 * <p>Device buffers passed as pointer arguments are tracked: each launch records the stream on
 * them, so closing a buffer while a launch that uses it is queued defers its free.
 * The events of the configuration ({@link LaunchConfig#programmaticEvent()},
 * {@link LaunchConfig#launchCompletionEvent()}) are tracked the same way, and a launch whose event
 * was closed is refused.
 *
 * <p>A launch the driver rejects after Gatun's checks may have queued work anyway (its outcome
 * is uncertain): this launch then refuses to run again on any stream until the stream it failed
 * on has gone idle, which proves the uncertain submission finished.
 *
 * <p>Not thread-safe: one thread prepares and launches it at a time (use one per thread).
 */
public final class KernelLaunch {

    private enum Mode {
        PLAIN, COOPERATIVE, EXTENDED
    }

    private final Kernel kernel;
    private final CudaContext context;
    private final ContextState state;
    private final LaunchCalls launches;
    private final LaunchConfig config;
    private final KernelArg[] kinds;
    private final DeviceBuffer[] buffers;
    private final ParamBlock params;
    private final Mode mode;
    private final LaunchExConfig extended;
    /** The configuration's events (null where it has none): each launch checks them open and records its use. */
    private final Event programmaticEvent;
    private final Event completionEvent;
    private StreamState uncertainOn;
    private String uncertainError;

    KernelLaunch(Kernel kernel, LaunchConfig config, KernelArg[] args) {
        this.kernel = kernel;
        this.context = kernel.context();
        this.state = context.state();
        this.launches = state.calls().launches();
        this.config = config;
        this.kinds = Objects.requireNonNull(args, "the argument array is null; pass no arguments instead").clone();
        LaunchChecks.check(kernel.launchTarget(), config, kinds);
        this.programmaticEvent = checkedEvent(config.programmaticEvent(), "the programmatic event");
        this.completionEvent = checkedEvent(config.launchCompletionEvent(), "the launch completion event");
        if (completionEvent != null) {
            state.driver().require(DriverFeature.LAUNCH_COMPLETION_EVENT);
        }
        if (config.sharedMemoryBytes() > 0) {
            kernel.ensureDynamicSharedMemory(config.sharedMemoryBytes());
        }
        this.buffers = new DeviceBuffer[kinds.length];
        this.params = new ParamBlock(kinds.length);
        for (int i = 0; i < kinds.length; i++) {
            bind(i, kinds[i]);
        }
        if (config.hasExtendedAttributes()) {
            this.mode = Mode.EXTENDED;
            this.extended = LaunchExConfig.retained(config, handleOf(programmaticEvent), handleOf(completionEvent));
        } else {
            this.mode = config.isCooperative() ? Mode.COOPERATIVE : Mode.PLAIN;
            this.extended = null;
        }
    }

    /**
     * A launch attribute's event, checked: of this launch's context, open, and with timing
     * disabled (the driver takes no other); null for none.
     */
    private Event checkedEvent(Optional<Event> event, String what) {
        if (event.isEmpty()) {
            return null;
        }
        Event e = event.get();
        e.checkedOwnerFor(context, what + " of kernel '" + kernel.name() + "'");
        if (e.isTiming()) {
            throw new IllegalArgumentException(what + " of kernel '" + kernel.name() + "' (" + e + ") records timing, "
                    + "and the driver takes only an event with timing disabled: create it with "
                    + "CudaContext.createEvent(), not createTimingEvent()");
        }
        return e;
    }

    private static MemorySegment handleOf(Event event) {
        return event == null ? MemorySegment.NULL : event.handle();
    }

    /** Checks that a launch attribute's event is still open, and records its use on {@code s} (no allocation; under its lock). */
    private void useEvent(Event event, String what, StreamState s) {
        if (event.isClosed()) {
            throw new IllegalStateException(what + " of this launch of kernel '" + kernel.name() + "' (" + event
                    + ") is closed; prepare the launch again with an open event");
        }
        event.handleForUse(s); // the kernel records it on s: its destroy waits for s's later fence
        event.recordedBy(s);
    }

    private void bind(int index, KernelArg arg) {
        long pointer = 0;
        if (arg instanceof KernelArg.Pointer p) {
            if (p.view() != null) {
                DeviceBuffer b = p.view().buffer();
                if (b.context() != context && !context.isPeerAccessEnabled(b.context())) {
                    throw new IllegalArgumentException("argument " + index + " (" + b + ") is device "
                            + b.context().device().ordinal() + "'s memory; a kernel on device "
                            + context.device().ordinal() + " may use it only after "
                            + "enablePeerAccess from this context to that one");
                }
                pointer = p.view().address();
                buffers[index] = b;
            } else {
                pointer = p.address();
                buffers[index] = null;
            }
        }
        params.set(index, arg, pointer);
    }

    /** {@return the kernel this launch runs} */
    public Kernel kernel() {
        return kernel;
    }

    /** {@return the grid, block, shared memory and launch attributes this launch uses} */
    public LaunchConfig config() {
        return config;
    }

    /**
     * Submits the launch on {@code stream}. Allocates nothing once warmed.
     *
     * @param stream a stream of the kernel's context
     */
    public void launch(Stream stream) {
        StreamState s = stream.openState();
        if (stream.context() != context) {
            context.checkSame(stream.context(), "the stream");
        }
        kernel.checkOpen();
        if (uncertainOn != null) {
            proveUncertainDone();
        }
        synchronized (s.lock()) { // admitted and queued with no capture beginning or ending between
            s.checkOpen();
            submit(s);
        }
    }

    /** The launch proper, under the stream's lock: admission of everything it uses, then the driver call. */
    private void submit(StreamState s) {
        if (programmaticEvent != null) {
            useEvent(programmaticEvent, "the programmatic event", s);
        }
        if (completionEvent != null) {
            useEvent(completionEvent, "the launch completion event", s);
        }
        for (DeviceBuffer b : buffers) {
            if (b != null) {
                b.useOnPeer(context, s); // same context, or a peer checked at prepare
            }
        }
        kernel.module().usedOn(s);
        MemorySegment function = kernel.function();
        // function belongs to a module this kernel retains; params is this launch's block, one
        // valid slot per kernel parameter (count and sizes checked at prepare); every device
        // pointer in it belongs to an open buffer that now lists this stream, so none is freed
        // before the launch completes; the stream is open and of this context; so is each event
        // the attributes name, which now lists this stream too.
        try {
            switch (mode) {
                case PLAIN -> launches.launch(function, config, s.handle(), params.launchParams(), kernel.name());
                case COOPERATIVE -> launches.launchCooperative(function, config, s.handle(), params.launchParams(),
                        kernel.name());
                case EXTENDED -> {
                    extended.setStream(s.handle());
                    launches.launchExtended(extended.segment(), function, params.launchParams(), kernel.name());
                }
            }
        } catch (CudaException e) {
            uncertainOn = s; // the launch may have been queued although it failed
            uncertainError = e.resultName();
            throw explained(e);
        } finally {
            s.submitted(); // even when it failed: its outcome is uncertain
            Reference.reachabilityFence(params); // launchParams() does not keep the block alive through the call
        }
    }

    /**
     * A refusal that is not sticky, restated with the kernel's attributes, this launch's
     * configuration and the driver's occupancy for its block ({@link LaunchRefusedException}); a
     * sticky error (the context is poisoned) as it is. Only on this failure path does it ask the
     * driver anything more; what it cannot learn, it leaves out.
     */
    private CudaException explained(CudaException refusal) {
        if (CuResults.isSticky(refusal.result())) {
            return refusal;
        }
        KernelAttributes attributes;
        try {
            attributes = kernel.attributes();
        } catch (CudaException unreadable) {
            refusal.addSuppressed(unreadable);
            return refusal;
        }
        int blocks = LaunchRefusedException.UNKNOWN;
        try {
            blocks = kernel.maxActiveBlocksPerMultiprocessor(config.blockX() * config.blockY() * config.blockZ(),
                    config.sharedMemoryBytes());
        } catch (CudaException unknown) {
            refusal.addSuppressed(unknown);
        }
        return new LaunchRefusedException(refusal, attributes, config, blocks);
    }

    private void proveUncertainDone() {
        StreamState s = uncertainOn;
        // s was open when the failed launch used it; a closed stream is idle once drained.
        int r = s.closed() ? (s.drained() ? 0 : CuResults.NOT_READY) : state.calls().streams().poll(s.handle());
        if (r != 0) {
            throw new IllegalStateException("the previous launch of kernel '" + kernel.name() + "' on " + s + " failed ("
                    + uncertainError + ") after possibly queueing work; it is proven finished only once that stream is "
                    + "idle: synchronize it, then launch again");
        }
        uncertainOn = null;
        uncertainError = null;
    }

    private void checkKind(int index, Class<? extends KernelArg> expected) {
        if (index < 0 || index >= kinds.length) {
            throw new IndexOutOfBoundsException("kernel '" + kernel.name() + "' was prepared with " + kinds.length
                    + " arguments; no argument " + index);
        }
        if (!expected.isInstance(kinds[index])) {
            throw new IllegalArgumentException("argument " + index + " of kernel '" + kernel.name() + "' was prepared as "
                    + kinds[index].getClass().getSimpleName() + ", not " + expected.getSimpleName());
        }
    }

    /**
     * Sets argument {@code index}, prepared as an {@code int}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setInt(int index, int value) {
        checkKind(index, KernelArg.I32.class);
        params.setInt(index, value);
        return this;
    }

    /**
     * Sets argument {@code index}, prepared as a {@code long}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setLong(int index, long value) {
        checkKind(index, KernelArg.I64.class);
        params.setLong(index, value);
        return this;
    }

    /**
     * Sets argument {@code index}, prepared as a {@code float}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setFloat(int index, float value) {
        checkKind(index, KernelArg.F32.class);
        params.setFloat(index, value);
        return this;
    }

    /**
     * Sets argument {@code index}, prepared as a {@code double}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setDouble(int index, double value) {
        checkKind(index, KernelArg.F64.class);
        params.setDouble(index, value);
        return this;
    }

    /**
     * Sets argument {@code index}, prepared as a {@code short}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setShort(int index, short value) {
        checkKind(index, KernelArg.I16.class);
        params.setShort(index, value);
        return this;
    }

    /**
     * Sets argument {@code index}, prepared as a {@code byte}, for the launches that follow.
     *
     * @param index the argument's position, from 0
     * @param value the new value
     * @return this launch
     */
    public KernelLaunch setByte(int index, byte value) {
        checkKind(index, KernelArg.I8.class);
        params.setByte(index, value);
        return this;
    }

    /**
     * Points argument {@code index} (prepared as a pointer) at another view.
     *
     * @param index the argument's position, from 0
     * @param view the view the kernel receives the start address of
     * @return this launch
     * @throws NullPointerException when {@code view} is null; the argument is then unchanged
     */
    public KernelLaunch setPointer(int index, DeviceView view) {
        checkKind(index, KernelArg.Pointer.class);
        bind(index, KernelArg.pointer(view));
        return this;
    }

    /** {@return whether a failed launch is still unproven (see the class comment)} */
    public Optional<String> uncertainFailure() {
        return Optional.ofNullable(uncertainError);
    }

    ParamBlock params() {
        return params;
    }

    /**
     * For a graph kernel node made from this launch (added to a graph, or set on an executable's
     * node): checks that the kernel is {@code graphContext}'s and open, and that every device
     * buffer the launch passes is open; returns those buffers' owners, for the graph to hold.
     */
    List<NativeResource> checkedArgumentOwnersFor(CudaContext graphContext) {
        graphContext.checkSame(kernel.context(), "the kernel");
        kernel.checkOpen();
        List<NativeResource> owners = argumentOwners();
        for (NativeResource b : owners) {
            b.checkOpen();
        }
        return owners;
    }

    /** The owners of the device buffers this launch passes (for a graph node that takes its arguments). */
    List<NativeResource> argumentOwners() {
        List<NativeResource> owners = new ArrayList<>();
        for (DeviceBuffer b : buffers) {
            if (b != null) {
                owners.add(b.resource());
            }
        }
        return owners;
    }
}
