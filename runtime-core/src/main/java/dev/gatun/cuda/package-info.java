/**
 * Gatun: the CUDA driver API for Java, through the Foreign Function &amp; Memory API. Start with
 * {@link dev.gatun.cuda.Cuda#system()}, take a {@link dev.gatun.cuda.Device} and its
 * {@link dev.gatun.cuda.CudaContext}; every owner (anything that holds a native resource, and is
 * closed when done) is made from a context and belongs to it.
 *
 * <h2>The types, by concern</h2>
 *
 * <ul>
 *   <li><b>Driver, devices, contexts:</b> {@link dev.gatun.cuda.Cuda}, {@link dev.gatun.cuda.CudaVersion},
 *       {@link dev.gatun.cuda.Gatun}, {@link dev.gatun.cuda.Device}, {@link dev.gatun.cuda.DeviceAttribute},
 *       {@link dev.gatun.cuda.DeviceCapabilities}, {@link dev.gatun.cuda.PeerLink},
 *       {@link dev.gatun.cuda.CudaContext}, {@link dev.gatun.cuda.SmPartition} (green contexts).
 *   <li><b>Memory:</b> {@link dev.gatun.cuda.DeviceBuffer} and its typed {@link dev.gatun.cuda.DeviceView}
 *       ({@link dev.gatun.cuda.ElementType}); {@link dev.gatun.cuda.PinnedBuffer}
 *       ({@link dev.gatun.cuda.TransferState}); {@link dev.gatun.cuda.MappedWord};
 *       {@link dev.gatun.cuda.GrowableBuffer}; {@link dev.gatun.cuda.MemoryPool}
 *       ({@link dev.gatun.cuda.PoolReuse}, {@link dev.gatun.cuda.MemoryAccess},
 *       {@link dev.gatun.cuda.PoolExportHandle}); the context's device pool,
 *       {@link dev.gatun.cuda.DevicePoolView}; batched copies, {@link dev.gatun.cuda.CopyBatch}.
 *   <li><b>Streams, events, memory operations:</b> {@link dev.gatun.cuda.Stream},
 *       {@link dev.gatun.cuda.Event}, {@link dev.gatun.cuda.Fence}, {@link dev.gatun.cuda.StreamMemOps}
 *       and {@link dev.gatun.cuda.MemOp} ({@link dev.gatun.cuda.WaitCondition},
 *       {@link dev.gatun.cuda.WaitFlag}, {@link dev.gatun.cuda.WriteFlag},
 *       {@link dev.gatun.cuda.StreamMemOpSupport}).
 *   <li><b>Kernels and modules:</b> {@link dev.gatun.cuda.ModuleRegistry}, {@link dev.gatun.cuda.ModuleImage},
 *       {@link dev.gatun.cuda.ModuleInfo}, {@link dev.gatun.cuda.KernelLibrary}, {@link dev.gatun.cuda.Kernel}
 *       ({@link dev.gatun.cuda.KernelAttribute}, {@link dev.gatun.cuda.KernelAttributes}),
 *       {@link dev.gatun.cuda.KernelArg}, {@link dev.gatun.cuda.LaunchConfig}
 *       ({@link dev.gatun.cuda.ClusterSchedulingPolicy}), {@link dev.gatun.cuda.KernelLaunch}.
 *   <li><b>Graphs and captures:</b> {@link dev.gatun.cuda.Graph}, {@link dev.gatun.cuda.GraphNode},
 *       {@link dev.gatun.cuda.ConditionalHandle}, {@link dev.gatun.cuda.ConditionalNode},
 *       {@link dev.gatun.cuda.GraphExec} ({@link dev.gatun.cuda.GraphUpdateResult},
 *       {@link dev.gatun.cuda.GraphUpdateReport}), {@link dev.gatun.cuda.StreamCapture}
 *       ({@link dev.gatun.cuda.CaptureMode}), {@link dev.gatun.cuda.CaptureArena},
 *       {@link dev.gatun.cuda.CapturedWork}, {@link dev.gatun.cuda.UpdatingExecutable},
 *       {@link dev.gatun.cuda.GraphInstaller}. Lifecycles per slot and the validation latch are in
 *       {@code dev.gatun.cuda.graph} (gatun-graph).
 *   <li><b>Diagnostics and counters:</b> {@link dev.gatun.cuda.ContextDiagnostics}
 *       ({@code ctx.diagnostics()}), {@link dev.gatun.cuda.LiveOwner}, {@link dev.gatun.cuda.OwnerKind},
 *       {@link dev.gatun.cuda.MemoryInfo}, {@link dev.gatun.cuda.MemoryReport},
 *       {@link dev.gatun.cuda.MemoryUsage}, {@link dev.gatun.cuda.DevicePoolSite}, and the counters:
 *       {@link dev.gatun.cuda.ContextCounters}, {@link dev.gatun.cuda.DevicePoolCounters},
 *       {@link dev.gatun.cuda.MemoryPoolCounters}, {@link dev.gatun.cuda.GrowableBufferCounters},
 *       {@link dev.gatun.cuda.GraphAllocationCounters}, {@link dev.gatun.cuda.CaptureArenaCounters},
 *       {@link dev.gatun.cuda.GraphInstallCounters}, {@link dev.gatun.cuda.OutOfMemoryCounters}.
 *   <li><b>Sharing between processes (IPC):</b> {@link dev.gatun.cuda.IpcBufferExport},
 *       {@link dev.gatun.cuda.IpcEventHandle}.
 *   <li><b>Options:</b> {@link dev.gatun.cuda.ContextOptions}, {@link dev.gatun.cuda.DevicePoolOptions},
 *       {@link dev.gatun.cuda.MemoryPoolOptions}, {@link dev.gatun.cuda.GrowableBufferOptions},
 *       {@link dev.gatun.cuda.GpuCoredumps}.
 *   <li><b>Errors</b>, all under {@link dev.gatun.cuda.GatunException}:
 *       {@link dev.gatun.cuda.CudaException} (the driver's) and its kinds
 *       {@link dev.gatun.cuda.ContextPoisonedException}, {@link dev.gatun.cuda.CaptureInvalidatedException},
 *       {@link dev.gatun.cuda.ImageRejectedException}, {@link dev.gatun.cuda.LaunchRefusedException},
 *       {@link dev.gatun.cuda.OutOfDeviceMemoryException}; and Gatun's own
 *       {@link dev.gatun.cuda.CudaUnavailableException}, {@link dev.gatun.cuda.DriverTooOldException},
 *       {@link dev.gatun.cuda.CaptureActiveException}, {@link dev.gatun.cuda.CaptureArenaOverflowException},
 *       {@link dev.gatun.cuda.ReservationExceededException}. Misuse is a plain
 *       {@link IllegalArgumentException} or {@link IllegalStateException} that says what to do.
 * </ul>
 *
 * <h2>One naming</h2>
 *
 * Every rule below holds for every public name of gatun-core and gatun-graph, and a test reads
 * the API listings ({@code api/*.api}) and fails on a name that breaks one (ApiNamingTest).
 *
 * <ul>
 *   <li><b>Sizes.</b> The size of a thing in bytes is {@code byteSize()}, a {@code long}; where it
 *       starts in another, {@code byteOffset()}. Any other count of bytes ends in {@code Bytes}
 *       ({@code liveBytes}, {@code chunkBytes}, {@code withHardCapBytes}), never starts with it.
 *       {@code size()} and {@code *Count} count items, never bytes ({@link dev.gatun.cuda.CopyBatch#size()}
 *       counts copies, {@link dev.gatun.cuda.DeviceView#elementCount()} elements).
 *   <li><b>Counters.</b> A snapshot of counts is a record named {@code *Counters}, read with
 *       {@code counters()} from what it counts (a view that reads several names each:
 *       {@code outOfMemoryCounters()}). Its components are {@code long}s (a breakdown by reason is a
 *       map from an enum to a count). Events since creation are plural nouns with their kind in
 *       front ({@code allocations}, {@code asyncFrees}, {@code spareUpdates}); what holds now is
 *       named by its state in front: <em>live</em> (held by an owner), <em>retained</em> (kept for
 *       reuse by no owner), <em>reserved</em> (address space or pool memory held from the device),
 *       <em>mapped</em> (physical memory behind a reservation), <em>used</em> (the driver's count in
 *       use), <em>pending</em>; the most it ever was is {@code peak*} ({@code peakMappedBytes}), and
 *       a reset of it {@code resetPeaks()}.
 *   <li><b>Booleans.</b> A question a class or enum answers is {@code isX}, {@code hasX} or
 *       {@code canX}; a record's component keeps its name ({@code LiveOwner.borrowed()}).
 *   <li><b>Driver constants.</b> Where the driver takes one value of a set, the API takes an
 *       enum that keeps the driver's value inside ({@link dev.gatun.cuda.DeviceAttribute},
 *       {@link dev.gatun.cuda.KernelAttribute}, {@link dev.gatun.cuda.WaitCondition}, ...), never an
 *       {@code int}. {@link dev.gatun.cuda.CudaException#result()} stays the driver's number, beside its
 *       name.
 *   <li><b>Factories.</b> A context makes its owners ({@code createX}, {@code allocateX},
 *       {@code reserveGrowable}); what another library or process made enters through its type:
 *       {@code Stream.borrow}, {@code DeviceBuffer.borrow}, {@code Kernel.borrow},
 *       {@code DeviceBuffer.importFrom}, {@code Event.importFrom}, {@code MemoryPool.importFrom}.
 * </ul>
 */
package dev.gatun.cuda;
