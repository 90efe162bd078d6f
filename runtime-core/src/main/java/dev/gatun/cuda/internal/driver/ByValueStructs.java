package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUipcEventHandle_st;
import dev.gatun.cuda.bindings.driver.CUipcMemHandle_st;
import java.lang.foreign.MemoryLayout;
import java.util.Map;

/**
 * The driver functions Gatun calls whose C prototypes take a struct by value, with the index and
 * layout of each such parameter. jextract gives a by-value struct the same {@code MemorySegment}
 * carrier as a pointer, so {@code Downcalls} needs this table to pass the struct's bytes rather
 * than its address. {@code ByValueStructsTest} checks it against the generated prototypes of
 * every function in driver.functions.
 */
final class ByValueStructs {

    /** The 64-byte IPC handles ({@code CUipcMemHandle}, {@code CUipcEventHandle}). */
    static final Map<String, Map<Integer, MemoryLayout>> DRIVER = Map.of(
            "cuIpcOpenMemHandle_v2", Map.of(1, CUipcMemHandle_st.layout()),
            "cuIpcOpenEventHandle", Map.of(1, CUipcEventHandle_st.layout()));

    private ByValueStructs() {
    }
}
