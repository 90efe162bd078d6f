package dev.gatun.cuda;

import dev.gatun.cuda.internal.nvrtc.CacheKey;
import dev.gatun.cuda.internal.nvrtc.CompileRequest;
import dev.gatun.cuda.internal.nvrtc.NvrtcApi;
import dev.gatun.cuda.internal.nvrtc.NvrtcProgram;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Compiles CUDA C++ to PTX or CUBIN with NVRTC, through a {@link KernelCache}. Get one from
 * {@link NvrtcLibrary#compiler()}. Thread-safe: each compile owns its own NVRTC program.
 *
 * <p>NVRTC receives, in order: {@code --gpu-architecture=<target>}, {@code -I<dir>} for each of the
 * caller's include directories and then each toolkit include directory found at construction,
 * then the caller's options.
 */
public final class NvrtcCompiler {

    private final NvrtcApi api;
    private final String nvrtcVersion;
    private final KernelCache cache;
    private final List<Path> toolkitIncludeDirectories;

    NvrtcCompiler(NvrtcApi api, String nvrtcVersion, KernelCache cache, List<Path> toolkitIncludeDirectories) {
        this.api = api;
        this.nvrtcVersion = nvrtcVersion;
        this.cache = Objects.requireNonNull(cache, "cache");
        this.toolkitIncludeDirectories = List.copyOf(toolkitIncludeDirectories);
    }

    /**
     * Compiles {@code source}, or returns the cached result of an identical earlier compile
     * without calling NVRTC.
     *
     * @throws IllegalArgumentException when the source is null or holds a NUL character
     * @throws CompilationException when NVRTC rejects the program; carries the full log
     * @throws CudaException when another NVRTC call fails
     */
    public CompiledProgram compile(String source, CompileOptions options) {
        Objects.requireNonNull(options, "options");
        CompileRequest request = new CompileRequest(source, options, toolkitIncludeDirectories, nvrtcVersion);
        if (!cache.isEnabled()) {
            return NvrtcProgram.compile(api, request);
        }
        String key = CacheKey.of(request);
        Optional<CompiledProgram> cached = cache.load(key);
        if (cached.isPresent()) {
            return cached.get();
        }
        CompiledProgram program = NvrtcProgram.compile(api, request);
        cache.store(key, program);
        return program;
    }

    /** The toolkit include directories passed to every compile, after the caller's own. */
    public List<Path> toolkitIncludeDirectories() {
        return toolkitIncludeDirectories;
    }

    public KernelCache cache() {
        return cache;
    }

    /** The NVRTC version, e.g. {@code 13.0}; part of every cache key. */
    public String nvrtcVersion() {
        return nvrtcVersion;
    }
}
