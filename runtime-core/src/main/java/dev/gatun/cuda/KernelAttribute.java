package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * A kernel's attribute, as {@link Kernel#attribute} reads it ({@code cuFuncGetAttribute}) and
 * {@link Kernel#setAttribute} sets the settable ones ({@code cuFuncSetAttribute}): one constant
 * for each {@code CU_FUNC_ATTRIBUTE_*} value of the {@code cuda.h} Gatun's bindings come from
 * (CUDA 13.0), named as there without the prefix; the CUDA driver API's
 * {@code CUfunction_attribute} says what each means. {@link Kernel#attributes()} reads the
 * common ones at once.
 */
public enum KernelAttribute {
    /** {@code CU_FUNC_ATTRIBUTE_BINARY_VERSION}. */
    BINARY_VERSION(CudaDriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION()),
    /** {@code CU_FUNC_ATTRIBUTE_CACHE_MODE_CA}. */
    CACHE_MODE_CA(CudaDriver.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA()),
    /** {@code CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE}. */
    CLUSTER_SCHEDULING_POLICY_PREFERENCE(CudaDriver.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE()),
    /** {@code CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET}. */
    CLUSTER_SIZE_MUST_BE_SET(CudaDriver.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET()),
    /** {@code CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES}. */
    CONST_SIZE_BYTES(CudaDriver.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES()),
    /** {@code CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES}. */
    LOCAL_SIZE_BYTES(CudaDriver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES()),
    /** {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}. */
    MAX_DYNAMIC_SHARED_SIZE_BYTES(CudaDriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES()),
    /** {@code CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK}. */
    MAX_THREADS_PER_BLOCK(CudaDriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK()),
    /** {@code CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED}. */
    NON_PORTABLE_CLUSTER_SIZE_ALLOWED(CudaDriver.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED()),
    /** {@code CU_FUNC_ATTRIBUTE_NUM_REGS}. */
    NUM_REGS(CudaDriver.CU_FUNC_ATTRIBUTE_NUM_REGS()),
    /** {@code CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT}. */
    PREFERRED_SHARED_MEMORY_CARVEOUT(CudaDriver.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT()),
    /** {@code CU_FUNC_ATTRIBUTE_PTX_VERSION}. */
    PTX_VERSION(CudaDriver.CU_FUNC_ATTRIBUTE_PTX_VERSION()),
    /** {@code CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH}. */
    REQUIRED_CLUSTER_DEPTH(CudaDriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH()),
    /** {@code CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT}. */
    REQUIRED_CLUSTER_HEIGHT(CudaDriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT()),
    /** {@code CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH}. */
    REQUIRED_CLUSTER_WIDTH(CudaDriver.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH()),
    /** {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}. */
    SHARED_SIZE_BYTES(CudaDriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES());

    /** The driver's value: the one place an attribute becomes a number. */
    final int code;

    KernelAttribute(int code) {
        this.code = code;
    }
}
