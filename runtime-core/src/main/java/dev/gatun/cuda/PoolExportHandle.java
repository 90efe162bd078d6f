package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * The kind of operating-system handle a {@link MemoryPool} can be exported through to other
 * processes ({@code CUmemPoolProps.handleTypes}; {@link MemoryPoolOptions#withExportHandle}).
 */
public enum PoolExportHandle {
    /** Not exportable: the default. */
    NONE(CudaDriver.CU_MEM_HANDLE_TYPE_NONE()),
    /**
     * A POSIX file descriptor ({@code CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}, Linux): the
     * application passes it to the other process itself (over a Unix socket with
     * {@code SCM_RIGHTS}, or with {@code pidfd_getfd}).
     */
    POSIX_FILE_DESCRIPTOR(CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR());

    /** The {@code CUmemAllocationHandleType}. */
    final int type;

    PoolExportHandle(int type) {
        this.type = type;
    }
}
