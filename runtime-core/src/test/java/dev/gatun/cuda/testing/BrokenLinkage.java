package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.load.Linkage;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

/** A dynamic loader that fails in a way nobody planned for: every call throws {@link #failure}. */
public final class BrokenLinkage implements Linkage {

    public final IllegalStateException failure = new IllegalStateException("the loader broke");

    @Override
    public Opened open(Path path) {
        throw failure;
    }

    @Override
    public Opened open(String soname) {
        throw failure;
    }

    @Override
    public Optional<Path> fileOf(MemorySegment symbol) {
        throw failure;
    }
}
