/**
 * The graph wing: the state of graphs, their node building, conditional nodes, stream captures
 * and executables, under the public faces {@code Graph}, {@code GraphNode}, {@code StreamCapture}
 * and {@code GraphExec}. It is keyed on internal types ({@code NativeResource}, {@code Holds},
 * {@code StreamState}, {@code GraphAllocations}, {@code ArenaSpace}), never on owners; it sits on
 * top of {@code internal/}, and nothing else in {@code internal/} uses it.
 *
 * <h2>The files</h2>
 *
 * <ul>
 *   <li>{@link dev.gatun.cuda.internal.graph.GraphState}: one root graph and what it keeps
 *       alive (its handle, its bodies, its holds, what each node names, its executables and the
 *       captures recording into it).
 *   <li>{@link dev.gatun.cuda.internal.graph.NodeBuilder}: the one add-node path of a root or a
 *       body, and the other edits of its node list; {@link dev.gatun.cuda.internal.graph.Node}
 *       and {@link dev.gatun.cuda.internal.graph.NodeKind}: a node as the wing knows it.
 *   <li>{@link dev.gatun.cuda.internal.graph.Conditionals}: conditional handles and nodes, for
 *       a graph and for a capture in progress.
 *   <li>{@link dev.gatun.cuda.internal.graph.CaptureSession}: one capture from its begin to its
 *       end or abort; {@link dev.gatun.cuda.internal.graph.CaptureMemory}: what it allocates on
 *       its stream (memory nodes, or ranges of a capture arena).
 *   <li>{@link dev.gatun.cuda.internal.graph.ExecState}: an executable, its accumulator and its
 *       launch; {@link dev.gatun.cuda.internal.graph.ExecUpdates}: its updates.
 * </ul>
 *
 * <h2>Why a graph keeps owners alive</h2>
 *
 * A graph's nodes bake in what the work names: buffer addresses, module functions, events, host
 * callbacks. The driver copies a graph when it instantiates, clones or embeds it (a child node),
 * and the copy lives on independently; an executable's launches may still run when the user
 * has closed every owner and the graph. So every owner a node names is <em>held</em>
 * ({@link dev.gatun.cuda.internal.context.NativeResource#hold()}): closing it is recorded, and its
 * retirement waits until the last holder lets go. Gatun cannot ask the driver which copy still
 * uses what, so the holders are the copies Gatun made: the graph, each clone, each executable.
 *
 * <h2>Hierarchy, box and attachments</h2>
 *
 * <ul>
 *   <li><b>Hierarchy.</b> A root graph and the bodies of the conditional nodes inside it, at any
 *       depth, are one {@code GraphState}: the driver owns the bodies and destroys them with the
 *       root, so only the root is destroyed ({@code cuGraphDestroy}), and a body's face is a view
 *       (closing it closes the view). Each root and each body has its own {@code NodeBuilder},
 *       the one its face adds through.
 *   <li><b>Box.</b> One {@link dev.gatun.cuda.internal.context.Holds} per graph, shared by the root
 *       and its bodies, and by a capture into one of its bodies. A capture into a new graph has
 *       holds of its own, which the graph it ends with takes over.
 *   <li><b>Attachments.</b> Per node added by hand, the owners it names ({@code namedByNode}).
 *       In a graph built by hand they decide what removing a node lets go of; a captured graph, a
 *       clone and what they were extended with hold everything until they are destroyed, since the
 *       driver does not say which captured node names what.
 *   <li><b>Accumulator.</b> Per executable, one {@code Holds} that only grows (the graph it was
 *       made from, each graph it was updated to, each node update), plus a hold on the graph it
 *       was made from (for life) and on the graph it runs now.
 * </ul>
 *
 * <h2>Invariants</h2>
 *
 * <ol>
 *   <li>What a node will name is held before the driver call that makes the node. A failed add
 *       may leave a hold behind (released with the graph); a node never exists without its holds.
 *   <li>A graph lets go of what it holds only in its retirement, after its handle was destroyed
 *       (or the driver destroyed it with an invalidated capture), and never while an executable
 *       of it exists: each executable holds the graph it was made from and the one it runs.
 *   <li>Every live root graph has exactly one {@code GraphState}; its bodies share it and are
 *       never retired on their own.
 *   <li>A graph's bookkeeping (nodes added, bodies, unused handles, what each node names,
 *       executables, captures open, why it is unusable, the nodes known by handle) changes only
 *       under its building lock, together with the driver call it describes; adding, removing,
 *       listing, cloning and instantiating take that lock, as the driver requires of one graph.
 *   <li>In a graph built by hand, each node added and not removed names exactly the owners it
 *       was added with; removing it lets go of an owner only when no other node names it, outside
 *       the building lock (a last hold let go may retire, which takes stream locks).
 *   <li>A node is removed at most once, and once {@code cuGraphDestroyNode} was called it is never
 *       named to the driver again, even when the call failed (what it named then stays held).
 *   <li>An executable's accumulator is appended to, never taken from, and released once: after the
 *       executable's destroy, or when retirement gives the handle up. An update whose outcome is
 *       uncertain appends the new graph's holds too.
 *   <li>An update takes its hold on the new graph before the driver call and drops the hold it no
 *       longer needs (the new graph's when refused or failed, the old current graph's on success)
 *       after the executable's lock, on every path.
 *   <li>A graph with memory nodes has at most one executable in the driver at a time, counted
 *       under the building lock and uncounted by the executable's destroy.
 *   <li>A graph is instantiated, or an executable updated to it, only when no capture records
 *       into it or a body of it, every body has a node, and every conditional handle is used.
 *   <li>A capture's session is its stream's capture scope from right after the driver began the
 *       capture to right after the driver ended it, both under the stream's lock; work queued
 *       under that lock is either captured and admitted (held) or queued after the end.
 *   <li>A stream reaches its capture through its state ({@link
 *       dev.gatun.cuda.internal.graph.CaptureSession#begunOn}), never through the public
 *       capture; an allocation there is the session's, refused in a body and beside conditional
 *       nodes, as conditional nodes are beside allocations or an arena.
 *   <li>A capture into a new graph hands its holds to the graph it ends with; an abort, an
 *       invalidation or a failed end releases them. A capture into a body holds for the body's
 *       graph, and one that fails or is aborted makes that graph unusable (part of its work may
 *       stay in the body).
 *   <li>A capture's allocations are discarded, never backed, unless it ended with a graph; its
 *       arena cursor is closed once, when the capture is over or its begin fails at the stream or
 *       in the driver.
 *   <li>Locks are taken in one order: a stream's, then a graph's building lock (two graphs' in
 *       the order of their ids), then an executable's. Nothing that may retire an owner runs under
 *       a building lock or an executable's lock.
 * </ol>
 *
 * <h2>Adding a node kind</h2>
 *
 * A new kind of node is one builder call, one face method and one fault-table row, as
 * {@code Graph.addEventRecord} shows:
 *
 * <ol>
 *   <li>the checked driver call in {@code internal/driver} ({@code GraphBuildCalls.addEventRecord})
 *       and its row in the fault table ({@code cuGraphAddEventRecordNode}: the fault coverage test
 *       fails for a driver function without one);
 *   <li>one {@link dev.gatun.cuda.internal.graph.NodeBuilder} method ({@code event}): under the
 *       building lock and in one confined arena, the checked dependencies, the holds, the driver
 *       call and {@code added(node, kind, names)};
 *   <li>one face method ({@code Graph.addEventRecord}): its argument checks (open, of this
 *       context, not in a body when the driver forbids it) and
 *       {@code face(builder.event(GraphNode.nodesOf(dependencies), ...))};
 *   <li>a row of {@code GraphNodeKindsContractTest}, which fails while a public {@code add} method
 *       of {@code Graph} has none (and a {@link dev.gatun.cuda.internal.graph.NodeKind} constant
 *       beside {@code GraphNode.Kind}'s for a new driver node type).
 * </ol>
 */
package dev.gatun.cuda.internal.graph;
