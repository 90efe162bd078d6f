package dev.gatun.testkit;

import dev.gatun.cuda.Cuda;

/**
 * Whether this testkit can reach gatun-core's driver seam, which gatun-core exports (and whose
 * API package it opens) to module {@code dev.gatun.testkit} alone: always on the class path, and
 * on the module path when the testkit is there too. Checked before either GPU is made, so that a
 * test build that put gatun-core on the module path and the testkit on the class path (Surefire
 * does, for a project whose only module-info.java is its main code's) fails with what to change,
 * not with a raw IllegalAccessError from the simulator's first class.
 */
final class DriverSeamAccess {

    static final String SEAM = "dev.gatun.cuda.internal.driver";

    private DriverSeamAccess() {
    }

    /** @throws IllegalStateException when the module system keeps the seam from this testkit */
    static void require() {
        Module core = Cuda.class.getModule();
        Module testkit = DriverSeamAccess.class.getModule();
        String api = Cuda.class.getPackageName();
        if (core.isExported(SEAM, testkit) && core.isOpen(api, testkit)) {
            return;
        }
        throw new IllegalStateException("gatun-testkit is " + where(testkit) + ", but gatun-core is " + where(core)
                + ", which lets module dev.gatun.testkit alone reach its driver seam. Surefire does this to a "
                + "project whose only module-info.java is its main code's: a test-scope dependency goes on the "
                + "class path. Give the tests a module-info.java of their own (src/test/java, with "
                + "'requires dev.gatun.testkit;'), or add '--add-exports " + core.getName() + "/" + SEAM
                + "=ALL-UNNAMED --add-opens " + core.getName() + "/" + api + "=ALL-UNNAMED' to Surefire's "
                + "<argLine>, or run the tests on the class path (<useModulePath>false</useModulePath>); "
                + "gatun-testkit's README, \"Add it\", shows each");
    }

    private static String where(Module module) {
        return module.isNamed() ? "on the module path (module " + module.getName() + ")" : "on the class path";
    }
}
