package dev.gatun.cuda.bindings;

/**
 * Opens the native libraries for the generated bindings. Gatun's runtime ({@code gatun-core})
 * provides one, so that a raw generated call reaches the very library the runtime opened and
 * fails, when there is none, with the runtime's own exception and reason.
 *
 * <p>{@link NativeLibrary} finds the provider with {@link java.util.ServiceLoader} through the
 * bindings' own class loader ({@code provides} in a module, {@code META-INF/services} on the class
 * path), so that each copy of Gatun loaded by its own class loader uses its own runtime. When
 * there is none, the bindings open the library themselves (see {@link NativeLibrary#open()}).
 */
public interface NativeLibraryProvider {

    /**
     * The library, opened by this provider: the same one on every call.
     *
     * @param library which library
     * @return the opened library
     * @throws RuntimeException of the provider's own type, a new one on every call, saying why
     *     the library cannot be opened
     */
    NativeLibrary.Opened open(NativeLibrary library);
}
