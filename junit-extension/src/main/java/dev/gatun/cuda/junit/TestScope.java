package dev.gatun.cuda.junit;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Stream;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One test's share of the GPU, kept in its method-level store: the leak baseline of each
 * context injected into it (taken at the first injection, before its stream is made) and the
 * stream injected per context, which its test and lifecycle methods share and which is closed
 * after them.
 */
final class TestScope {

    private final Map<CudaContext, LeakCheck> checks = new IdentityHashMap<>();
    private final Map<CudaContext, Stream> streams = new IdentityHashMap<>();

    /** The test's scope, made on first use. */
    static TestScope of(ExtensionContext test) {
        return test.getStore(GpuExtension.NAMESPACE).getOrComputeIfAbsent(TestScope.class, _ -> new TestScope(),
                TestScope.class);
    }

    /** The test's scope, or null when nothing was injected into it. */
    static TestScope find(ExtensionContext test) {
        return test.getStore(GpuExtension.NAMESPACE).get(TestScope.class, TestScope.class);
    }

    synchronized void baseline(CudaContext context) {
        checks.computeIfAbsent(context, LeakCheck::before);
    }

    synchronized Stream stream(CudaContext context) {
        return streams.computeIfAbsent(context, CudaContext::createStream);
    }

    /** Closes the injected streams; a failure to close one is added to {@code failures}. */
    synchronized void closeStreams(List<Throwable> failures) {
        for (Stream s : streams.values()) {
            try {
                s.close();
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        streams.clear();
    }

    /** The leak checks of the contexts injected into this test. */
    synchronized List<LeakCheck> checks() {
        return new ArrayList<>(checks.values());
    }
}
