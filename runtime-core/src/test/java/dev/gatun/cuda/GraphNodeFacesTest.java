package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node of a graph has one face: the {@link GraphNode} its add method returned is the one every
 * listing gives, whichever of the add's return and a listing on another thread made it first (the
 * wing makes the node under the graph's building lock; the face, after it, through one atomic
 * map). No driver call falls between the two, so neither an interposed call nor the schedule
 * explorer can stop a thread there: the race is sampled, many times, not forced.
 */
class GraphNodeFacesTest {

    private final AddKernelFixture fixture = new AddKernelFixture(new FakeDriverApi());
    private final CudaContext ctx = fixture.ctx;

    @AfterEach
    void nothingLeft() {
        fixture.close();
    }

    @Test
    void aNodeAddedWhileAnotherThreadListsHasOneFace() throws Exception {
        int nodes = 300;
        try (DeviceBuffer b = ctx.allocate(4 * AddKernelFixture.N); Graph g = ctx.createGraph()) {
            CountDownLatch start = new CountDownLatch(1);
            List<GraphNode> added = new ArrayList<>();
            Background<Void> adder = Background.run("adder", () -> {
                start.await();
                for (int i = 0; i < nodes; i++) {
                    added.add(g.addMemset(b.bytes(), (byte) i));
                }
            });
            Background<Map<Integer, GraphNode>> lister = Background.call("lister", () -> {
                Map<Integer, GraphNode> seen = new HashMap<>();
                start.await();
                while (seen.size() < nodes) {
                    for (GraphNode n : g.nodes()) {
                        GraphNode before = seen.putIfAbsent(n.index(), n);
                        if (before != null && before != n) {
                            throw new AssertionError(n + " was listed as two faces");
                        }
                    }
                }
                return seen;
            });
            start.countDown();
            adder.join();
            Map<Integer, GraphNode> seen = lister.join();
            assertEquals(nodes, added.size());
            for (GraphNode n : added) {
                assertSame(n, seen.get(n.index()), "the listing's face of " + n + " is the add's");
            }
            List<GraphNode> listed = g.nodes();
            for (GraphNode n : added) {
                assertTrue(listed.stream().anyMatch(l -> l == n), n + " is listed as itself");
            }
        }
    }
}
