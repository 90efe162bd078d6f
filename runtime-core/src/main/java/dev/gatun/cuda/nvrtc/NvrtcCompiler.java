package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.ModuleInfo;
import dev.gatun.cuda.ModuleRegistry;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.events.NvrtcCompileEvent;
import dev.gatun.cuda.internal.nvrtc.CacheKey;
import dev.gatun.cuda.internal.nvrtc.CompileRequest;
import dev.gatun.cuda.internal.nvrtc.NvrtcApi;
import dev.gatun.cuda.internal.nvrtc.NvrtcProgram;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compiles CUDA C++ to PTX or CUBIN with NVRTC, through a {@link KernelCache}. Get one from
 * {@link NvrtcLibrary#compiler()}. Thread-safe: each compile owns its own NVRTC program.
 *
 * <p>NVRTC receives, in order: {@code --gpu-architecture=<target>}, {@code -I<dir>} for each of the
 * caller's include directories and then each toolkit include directory found at construction,
 * then the caller's options.
 */
public final class NvrtcCompiler {

    private static final Logger LOG = LoggerFactory.getLogger(NvrtcCompiler.class);
    private static final int UNSUPPORTED_PTX_VERSION = CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION();

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
     * @param source the CUDA C++ source
     * @param options the target, program name, NVRTC options, include directories and name expressions
     * @return the compiled program
     * @throws IllegalArgumentException when the source is null or holds a NUL character
     * @throws CompilationException when NVRTC rejects the program; carries the full log
     * @throws CudaException when another NVRTC call fails
     */
    public CompiledProgram compile(String source, CompileOptions options) {
        Objects.requireNonNull(options, "options");
        CompileRequest request = new CompileRequest(source, options, toolkitIncludeDirectories, nvrtcVersion);
        NvrtcCompileEvent event = NvrtcCompileEvent.start();
        CompiledProgram program = null;
        boolean cacheHit = false;
        try {
            if (!cache.isEnabled()) {
                program = NvrtcProgram.compile(api, request);
                return program;
            }
            String key;
            try {
                key = CacheKey.of(request);
            } catch (IOException e) {
                LOG.warn("cannot read the headers under the include directories {} of {} for the kernel cache key ({}); "
                        + "compiling without the cache", request.callerIncludeDirectories(), options.programName(),
                        e.toString());
                program = NvrtcProgram.compile(api, request);
                return program;
            }
            Optional<CompiledProgram> cached = cache.load(key);
            if (cached.isPresent()) {
                cacheHit = true;
                program = cached.get();
                return program;
            }
            program = NvrtcProgram.compile(api, request);
            cache.store(key, program);
            return program;
        } finally {
            if (event != null) {
                event.program = options.programName();
                event.target = options.target().kind() + " " + options.target().architecture();
                event.sourceLength = source.length();
                event.cacheHit = cacheHit;
                event.compiled = program != null;
                event.imageBytes = program == null ? 0 : program.imageBytes();
                event.commit();
            }
        }
    }

    /**
     * Compiles CUDA C++ (through the kernel cache) and loads the result into {@code modules}
     * under {@code name}. Kernels can then be looked up by their name expressions (C++
     * templates) as well as by plain names. If the driver rejects NVRTC's PTX as a newer ISA
     * than it knows ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}), the source is compiled to
     * CUBIN for the same architecture instead, and so is every later source loaded into that
     * context ({@link ModuleRegistry#isPtxRejected()}).
     *
     * @param requiredKernels functions (or name expressions) that must exist; if one is missing
     *     the load fails with {@link IllegalArgumentException} and the previous entry stays
     * @param modules the registry of the context to load into
     * @param name the registry name
     * @param source the CUDA C++ source
     * @param options the target, program name, NVRTC options, include directories and name expressions
     * @return what was loaded under the name
     * @throws CompilationException with the full compiler log when the source does not compile
     */
    public ModuleInfo load(ModuleRegistry modules, String name, String source, CompileOptions options,
            String... requiredKernels) {
        CompiledProgram program = compile(source, modules.isPtxRejected() ? options.asCubin() : options);
        try {
            return modules.load(name, program.moduleImage(), requiredKernels);
        } catch (CudaException e) {
            if (e.result() != UNSUPPORTED_PTX_VERSION || program.kind() != CompileTarget.Kind.PTX) {
                throw e;
            }
            CompiledProgram cubin = compile(source, options.asCubin());
            return modules.load(name, cubin.moduleImage(), requiredKernels);
        }
    }

    /** {@return the toolkit include directories passed to every compile, after the caller's own} */
    public List<Path> toolkitIncludeDirectories() {
        return toolkitIncludeDirectories;
    }

    /** {@return the kernel cache this compiler reads and writes} */
    public KernelCache cache() {
        return cache;
    }

    /** {@return the NVRTC version, e.g. {@code 13.0}; part of every cache key} */
    public String nvrtcVersion() {
        return nvrtcVersion;
    }
}
