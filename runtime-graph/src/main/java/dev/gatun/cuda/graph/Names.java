package dev.gatun.cuda.graph;

import java.util.Objects;

/** The one rule for the names owners and slots carry into messages and logs. */
final class Names {

    private Names() {
    }

    static String require(String name, String what) {
        Objects.requireNonNull(name, what);
        if (name.isBlank()) {
            throw new IllegalArgumentException(what + " must not be blank");
        }
        return name;
    }
}
