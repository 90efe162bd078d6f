package dev.gatun.cuda.internal.driver;

/**
 * Layer 2 for one context: the driver's functions as typed calls, grouped by area. Each call
 * names its operation once, owns its out-parameters, checks its result and poisons the context
 * on a sticky error, all through one {@link Checked}; owners call only these. Device queries,
 * which belong to no context, are {@link DeviceCalls}.
 *
 * <h2>Which calls make the context current</h2>
 *
 * Making the context current costs one {@code cuCtxGetCurrent} (and a {@code cuCtxSetCurrent}
 * when another context is current on the thread). A call pays it only where the driver acts on
 * the calling thread's current context; this table is the one place that decides it.
 *
 * <p>The rule that makes this safe on virtual threads: every call that acts on the current
 * context makes it current itself, inside its typed call, immediately before its downcall, with
 * nothing between the two that can park. The current context belongs to the OS thread, which
 * for a virtual thread is its carrier of the moment; a virtual thread changes carriers only when
 * it parks, and a downcall pins it for the call's duration. No caller makes the context current
 * for calls that follow: whatever it does between them (take a lock, wait on the gate, log) may
 * park, and its next call may then run on another carrier. The calls that name a stream or an
 * event act in that handle's context on any carrier.
 *
 * <table>
 *   <caption>Current-context policy</caption>
 *   <tr><th>Calls</th><th>Policy</th><th>Why</th></tr>
 *   <tr><td>create a stream or an event; load a module, look up a function, function attributes,
 *       parameter info and occupancy; {@code cuMemAlloc}, {@code cuMemHostAlloc};
 *       {@code cuCtxSynchronize}, {@code cuCtxGetStreamPriorityRange},
 *       {@code cuCtxEnablePeerAccess}, {@code cuMemGetInfo}</td>
 *     <td>{@code current}</td>
 *     <td>They act on (or create into) the thread's current context. All are cold paths.</td></tr>
 *   <tr><td>{@code cuLaunchKernel}, {@code cuLaunchCooperativeKernel}, {@code cuLaunchKernelEx};
 *       event record, query, synchronize, elapsed time; stream query, synchronize, wait,
 *       capture status; every {@code cuMemcpy*Async}, {@code cuMemcpyPeerAsync} and
 *       {@code cuMemset*Async}; {@code cuMemAllocAsync}</td>
 *     <td>{@code live}: fail fast on poison only (the raw variants for completion evidence,
 *       {@code poll} and {@code try*}, and the capture status report instead of throwing)</td>
 *     <td>They name a stream or an event, and act in that handle's context whatever is current:
 *       the GPU probe (runtime-bench/src/c/current_context_probe.c, H200, driver 580, CUDA 13.0)
 *       ran a launch, async copies, a memset, event record and query, a stream wait and query,
 *       and a stream-ordered alloc and free on primary-context handles with another context
 *       current, all with right results. These are the hot paths: a warmed launch, record,
 *       query or async copy makes exactly its own driver call.</td></tr>
 *   <tr><td>{@code cuGraphLaunch}, {@code cuGraphUpload} ({@link GraphCalls})</td>
 *     <td>{@code live}</td>
 *     <td>They name their stream; the probe ran {@code cuGraphLaunch} with another context current,
 *       with right results. A warmed replay makes exactly its own driver call.</td></tr>
 *   <tr><td>capture begin and end, graph instantiate, executable update, node queries and node
 *       parameter updates ({@link GraphCalls}); creating, building, cloning and printing a graph,
 *       enabling a node ({@link GraphBuildCalls}); conditional handles and nodes
 *       ({@link ConditionalCalls})</td>
 *     <td>{@code current}</td>
 *     <td>Cold paths the probe did not cover; making the context current is the safe side.</td></tr>
 *   <tr><td>{@code cuMemAllocFromPoolAsync} ({@link MemoryPoolCalls})</td>
 *     <td>{@code live}</td>
 *     <td>Names its stream and its pool, as {@code cuMemAllocAsync} names its stream, which the
 *       probe ran with another context current. The hot path of pool allocation: one driver
 *       call. (The probe predates pools; the GPU suite's pool test runs it on the primary
 *       context.)</td></tr>
 *   <tr><td>stream memory operations: write, wait and batch ({@link MemOpCalls})</td>
 *     <td>{@code live}</td>
 *     <td>They name their stream, as a memset does (which the probe ran with another context
 *       current); a write or wait is one driver call. The mapped allocation, its device pointer
 *       and the batch node make the context current (cold paths).</td></tr>
 *   <tr><td>{@code cuLaunchHostFunc} ({@link CompletionCalls})</td>
 *     <td>{@code live}</td>
 *     <td>Names its stream, as a stream wait does (which the probe ran with another context
 *       current); the hot path of a completion future: one driver call. (The probe predates it;
 *       the GPU suite's completion test runs it on the primary context.)</td></tr>
 *   <tr><td>validating another library's handles: {@code cuStreamGetCtx},
 *       {@code cuStreamGetPriority}, {@code cuPointerGetAttributes} ({@link ForeignCalls})</td>
 *     <td>{@code live}</td>
 *     <td>Each names its stream or address; making Gatun's context current would not change
 *       the answer, which is what is checked against this context.</td></tr>
 *   <tr><td>virtual memory: granularity, reserve, create, map, set access
 *       ({@link VirtualMemoryCalls})</td>
 *     <td>{@code current}</td>
 *     <td>Cold paths (a growable buffer's creation, growth); making the context current is the
 *       safe side.</td></tr>
 *   <tr><td>the other pool calls: the default pool, create, attributes, trim, access, export
 *       and import of a pool and of its allocations ({@link MemoryPoolCalls})</td>
 *     <td>{@code current}</td>
 *     <td>Cold paths the probe did not cover; making the context current is the safe side.</td></tr>
 *   <tr><td>graph memory: trim and the usage counters ({@link GraphMemoryCalls})</td>
 *     <td>{@code current}</td>
 *     <td>They name the device, not a context; cold paths, so making the context current (and
 *       failing fast when it is poisoned) is the safe side.</td></tr>
 *   <tr><td>IPC: {@code cuIpcGetMemHandle}, {@code cuIpcOpenMemHandle_v2},
 *       {@code cuIpcOpenEventHandle} ({@link IpcCalls})</td>
 *     <td>{@code current}</td>
 *     <td>Cold paths the probe did not cover; an open maps into (or creates in) the current
 *       context, and for the others making it current is the safe side.</td></tr>
 *   <tr><td>{@code cuIpcGetEventHandle} ({@link IpcCalls})</td>
 *     <td>{@code live}</td>
 *     <td>Names its event, which belongs to one context.</td></tr>
 *   <tr><td>raw frees and destroys: {@code cuMemFree}, {@code cuMemFreeHost},
 *       {@code cuModuleUnload}, {@code cuStreamDestroy}, {@code cuEventDestroy},
 *       {@code cuMemPoolDestroy}, {@code cuIpcCloseMemHandle}; {@code cuMemUnmap}, {@code cuMemRelease},
 *       {@code cuMemAddressFree}; {@code cuGraphDestroy}, {@code cuGraphExecDestroy}</td>
 *     <td>{@code current}, each call its own ({@link Checked#currentForRaw}), without throwing</td>
 *     <td>They act on the current context (the graph destroys: cold, the safe side). They run in
 *       batches (a retirement round, a pool trim, a shrink), whose steps between two frees can
 *       park (the gate's lock, a section's wait, a log line): a virtual thread may be on another
 *       carrier by its next free, with another context current there or none. So each free makes
 *       its context current itself, one cuCtxGetCurrent when it already is. Their results still
 *       poison through {@code observe}.</td></tr>
 *   <tr><td>{@code cuMemFreeAsync}</td>
 *     <td>neither</td>
 *     <td>Names its stream (see the probe above); a raw result, for retirement.</td></tr>
 *   <tr><td>kernel libraries: load, kernel lookup ({@link LibraryCalls})</td>
 *     <td>{@code live}</td>
 *     <td>A library belongs to no context; its unload is a raw result, for retirement.</td></tr>
 *   <tr><td>{@code cuKernelGetFunction} ({@link LibraryCalls#function})</td>
 *     <td>{@code current}</td>
 *     <td>The driver answers with the function for the current context.</td></tr>
 *   <tr><td>a green context's streams: {@code cuGreenCtxStreamCreate} ({@link StreamCalls#create})</td>
 *     <td>{@code live}</td>
 *     <td>Names its green context, and ignores the current one.</td></tr>
 *   <tr><td>green contexts: SM resources, split, descriptors, create, destroy ({@link GreenContextCalls})</td>
 *     <td>none</td>
 *     <td>Driver-level: made from the device, not from a current context; they poison none.</td></tr>
 *   <tr><td>device queries, {@code cuDevicePrimaryCtxRetain} ({@link DeviceCalls})</td>
 *     <td>none</td>
 *     <td>Driver-level: they belong to no context, and poison none.</td></tr>
 *   <tr><td>{@code cuCtxGetDevice} for another library's context ({@link DeviceCalls#deviceOf})</td>
 *     <td>that context, made current for the one query</td>
 *     <td>The driver answers only for the current context; the thread's current context is
 *       restored right after, so neither Gatun's nor the other library's calls see a change.</td></tr>
 * </table>
 */
public final class DriverCalls {

    private final Checked checked;
    private final EventCalls events;
    private final StreamCalls streams;
    private final MemoryCalls memory;
    private final ModuleCalls modules;
    private final LaunchCalls launches;
    private final ContextCalls context;
    private final GraphCalls graphs;
    private final GraphBuildCalls graphBuilding;
    private final MemoryPoolCalls pools;
    private final ForeignCalls foreign;
    private final CompletionCalls completions;
    private final VirtualMemoryCalls virtualMemory;
    private final ConditionalCalls conditionals;
    private final IpcCalls ipc;
    private final GraphMemoryCalls graphMemory;
    private final MemOpCalls memOps;
    private final LibraryCalls libraries;
    private final BatchCopyCalls batchCopies;
    private final CoredumpCalls coredumps;

    public DriverCalls(Checked checked) {
        this.checked = checked;
        this.events = new EventCalls(checked);
        this.streams = new StreamCalls(checked);
        this.memory = new MemoryCalls(checked);
        this.modules = new ModuleCalls(checked);
        this.launches = new LaunchCalls(checked);
        this.context = new ContextCalls(checked);
        this.graphs = new GraphCalls(checked);
        this.graphBuilding = new GraphBuildCalls(checked);
        this.pools = new MemoryPoolCalls(checked);
        this.foreign = new ForeignCalls(checked);
        this.completions = new CompletionCalls(checked);
        this.virtualMemory = new VirtualMemoryCalls(checked);
        this.conditionals = new ConditionalCalls(checked);
        this.ipc = new IpcCalls(checked);
        this.graphMemory = new GraphMemoryCalls(checked);
        this.memOps = new MemOpCalls(checked);
        this.libraries = new LibraryCalls(checked);
        this.batchCopies = new BatchCopyCalls(checked);
        this.coredumps = new CoredumpCalls(checked);
    }

    /** The choke point: poison state, the driver, the device. */
    public Checked checked() {
        return checked;
    }

    /** See {@link Checked#live}: fails fast when a sticky error poisoned the context. */
    public void live(String operation) {
        checked.live(operation);
    }

    public EventCalls events() {
        return events;
    }

    public StreamCalls streams() {
        return streams;
    }

    public MemoryCalls memory() {
        return memory;
    }

    public ModuleCalls modules() {
        return modules;
    }

    public LaunchCalls launches() {
        return launches;
    }

    public ContextCalls context() {
        return context;
    }

    public GraphCalls graphs() {
        return graphs;
    }

    public GraphBuildCalls graphBuilding() {
        return graphBuilding;
    }

    public ConditionalCalls conditionals() {
        return conditionals;
    }

    public MemoryPoolCalls pools() {
        return pools;
    }

    public ForeignCalls foreign() {
        return foreign;
    }

    public CompletionCalls completions() {
        return completions;
    }

    public VirtualMemoryCalls virtualMemory() {
        return virtualMemory;
    }

    public IpcCalls ipc() {
        return ipc;
    }

    public GraphMemoryCalls graphMemory() {
        return graphMemory;
    }

    public MemOpCalls memOps() {
        return memOps;
    }

    public LibraryCalls libraries() {
        return libraries;
    }

    public BatchCopyCalls batchCopies() {
        return batchCopies;
    }

    public CoredumpCalls coredumps() {
        return coredumps;
    }
}
