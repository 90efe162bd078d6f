package dev.gatun.cuda.graph;

import java.util.List;
import java.util.function.Consumer;

/** Runs an action on every item of a list even when it throws for some: the rest must not leak because of one. */
final class EachOf {

    private EachOf() {
    }

    /** Applies {@code action} to every item, then rethrows the first failure with the others suppressed. */
    static <T> void run(List<T> items, Consumer<? super T> action) {
        RuntimeException first = null;
        for (T item : items) {
            try {
                action.accept(item);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
