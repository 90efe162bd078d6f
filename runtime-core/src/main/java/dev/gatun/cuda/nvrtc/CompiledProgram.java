package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.internal.nvrtc.Sha256;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * An image NVRTC produced, as a value: the same inputs give an equal {@code CompiledProgram},
 * whether it came from NVRTC or from a {@link KernelCache}. Immutable and thread-safe.
 */
public final class CompiledProgram {

    private final String programName;
    private final CompileTarget target;
    private final byte[] image;
    private final String log;
    private final Map<String, String> loweredNames;
    private final String nvrtcVersion;
    private final String sha256;

    /**
     * A compiled program, as the compiler or the kernel cache hands it over.
     *
     * @param programName the name the program was compiled under
     * @param target what the image is (PTX or CUBIN) and for which architecture
     * @param image the image; for PTX the text without a trailing NUL
     * @param log the compiler's log (warnings), empty when it wrote none
     * @param loweredNames each requested name expression to its lowered (mangled) name, in
     *     the order they were requested
     * @param nvrtcVersion the NVRTC that compiled it, e.g. {@code 13.0}
     */
    public CompiledProgram(String programName, CompileTarget target, byte[] image, String log,
            Map<String, String> loweredNames, String nvrtcVersion) {
        this.programName = Objects.requireNonNull(programName, "programName");
        this.target = Objects.requireNonNull(target, "target");
        this.image = image.clone();
        this.log = Objects.requireNonNull(log, "log");
        this.loweredNames = Collections.unmodifiableMap(new LinkedHashMap<>(loweredNames));
        this.nvrtcVersion = Objects.requireNonNull(nvrtcVersion, "nvrtcVersion");
        if (target.kind() == CompileTarget.Kind.PTX) {
            for (int i = 0; i < this.image.length; i++) {
                if (this.image[i] == 0) {
                    // The driver reads PTX as a C string: it would stop here without a word.
                    throw new IllegalArgumentException("PTX image of " + programName + " has a NUL byte at offset "
                            + i + "; PTX is text and must not contain one");
                }
            }
        }
        this.sha256 = Sha256.hex(this.image);
    }

    /** {@return the name NVRTC used for the source ({@link CompileOptions#programName()})} */
    public String programName() {
        return programName;
    }

    /** {@return what the source was compiled to: PTX or CUBIN, for which architecture} */
    public CompileTarget target() {
        return target;
    }

    /** {@return PTX or CUBIN} */
    public CompileTarget.Kind kind() {
        return target.kind();
    }

    /**
     * {@code compute_90} or {@code sm_90}.
     *
     * @return the architecture as NVRTC names it
     */
    public String architecture() {
        return target.architecture();
    }

    /** {@return a copy of the image; for PTX, the text without a trailing NUL} */
    public byte[] image() {
        return image.clone();
    }

    /** {@return the image's length in bytes, without copying it} */
    public long imageBytes() {
        return image.length;
    }

    /**
     * The image in native memory, as {@code cuModuleLoadData} reads it: PTX followed by a NUL,
     * a CUBIN as is. The segment lives as long as {@code arena}.
     *
     * @param arena the arena that owns the segment
     * @return the image, NUL-terminated for PTX
     */
    public MemorySegment toNative(Arena arena) {
        boolean text = target.kind() == CompileTarget.Kind.PTX;
        MemorySegment segment = arena.allocate(image.length + (text ? 1 : 0), 16);
        MemorySegment.copy(image, 0, segment, ValueLayout.JAVA_BYTE, 0, image.length);
        if (text) {
            segment.set(ValueLayout.JAVA_BYTE, image.length, (byte) 0);
        }
        return segment;
    }

    /** {@return the image as the driver loads it, with the lowered names of its name expressions} */
    public ModuleImage moduleImage() {
        return ModuleImage.of("nvrtc:" + programName + " (" + architecture() + ")", image).withLoweredNames(loweredNames());
    }

    /** {@return the compiler's log: warnings and remarks; empty when it wrote none} */
    public String log() {
        return log;
    }

    /** {@return each requested name expression to its lowered (mangled) name, in request order} */
    public Map<String, String> loweredNames() {
        return loweredNames;
    }

    /**
     * The lowered (mangled) name of a name expression, to look the kernel up in the loaded module.
     *
     * @param nameExpression an expression requested at compile time
     * @return its lowered name
     * @throws IllegalArgumentException when the expression was not requested at compile time
     */
    public String loweredName(String nameExpression) {
        String lowered = loweredNames.get(nameExpression);
        if (lowered == null) {
            throw new IllegalArgumentException("name expression '" + nameExpression + "' was not requested when "
                    + programName + " was compiled (requested: " + loweredNames.keySet()
                    + "); add it with CompileOptions.Builder.nameExpression and compile again");
        }
        return lowered;
    }

    /** {@return the NVRTC version that compiled this image, e.g. {@code 13.0}} */
    public String nvrtcVersion() {
        return nvrtcVersion;
    }

    /** {@return lower-case hex SHA-256 of {@link #image()}} */
    public String sha256() {
        return sha256;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CompiledProgram p && sha256.equals(p.sha256) && Arrays.equals(image, p.image)
                && programName.equals(p.programName) && target.equals(p.target) && log.equals(p.log)
                && loweredNames.equals(p.loweredNames) && nvrtcVersion.equals(p.nvrtcVersion);
    }

    @Override
    public int hashCode() {
        return sha256.hashCode();
    }

    @Override
    public String toString() {
        return "CompiledProgram[" + programName + ", " + target.kind() + " " + target.architecture() + ", "
                + image.length + " bytes, sha256=" + sha256 + ", NVRTC " + nvrtcVersion + "]";
    }
}
