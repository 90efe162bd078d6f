package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.blas.internal.api.BlasApi;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The libraries behind one seam (the real ones, or the tests' fake) and the {@link Blas} of each
 * context opened over them. The version checks run once per runtime, on first use; a refusal is
 * cached like a missing library, so every call gets the same typed answer.
 */
final class BlasRuntime {

    private final BlasCalls calls;
    private final ConcurrentHashMap<CudaContext, Blas> perContext = new ConcurrentHashMap<>();
    private volatile BlasVersions versions;
    private volatile BlasVersions.Checked cudnn;

    BlasRuntime(BlasApi api) {
        this.calls = new BlasCalls(api);
    }

    BlasCalls calls() {
        return calls;
    }

    /** The versions of cuBLASLt and cuBLAS, checked: throws the same refusal on every call. */
    BlasVersions versions() {
        BlasVersions v = versions;
        if (v == null) {
            v = BlasVersions.read(calls); // racing threads read the same; either result serves
            versions = v;
        }
        return v;
    }

    /** cuDNN's version, checked on first use (cuDNN is optional: GEMMs work without it). */
    BlasVersions.Checked cudnn() {
        BlasVersions.Checked v = cudnn;
        if (v == null) {
            v = BlasVersions.readCudnn(calls);
            cudnn = v;
        }
        return v;
    }

    Blas of(CudaContext context) {
        if (context.isClosed()) {
            throw new IllegalStateException("the context of device " + context.device().ordinal() + " is closed");
        }
        versions().requireBlas();
        Blas existing = perContext.get(context);
        if (existing != null) {
            return existing;
        }
        // Created outside the map's lock (handle creation is a library call that may take a while);
        // a thread that loses the race closes its own.
        Blas created = new Blas(this, context);
        Blas won = perContext.putIfAbsent(context, created);
        if (won != null) {
            created.close();
            return won;
        }
        created.closeWithContext();
        return created;
    }

    /** Forgets {@code blas} once it closed (its context closed): a later {@link #of} makes a new one. */
    void closed(Blas blas) {
        perContext.remove(blas.context(), blas);
    }
}
