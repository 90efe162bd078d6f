package dev.gatun.cuda.testing;

/** Tiny PTX texts for the simulated driver (which reads only .version and .entry signatures). */
public final class Ptx {

    private Ptx() {
    }

    /** A module with one kernel of the given PTX parameter types, e.g. {@code "u64", "u32", "f32", "u64"}. */
    public static String module(String kernel, String... paramTypes) {
        StringBuilder sb = new StringBuilder(".version 8.5\n.target sm_90\n.address_size 64\n\n.visible .entry ")
                .append(kernel).append("(\n");
        for (int i = 0; i < paramTypes.length; i++) {
            sb.append("    .param .").append(paramTypes[i]).append(' ').append(kernel).append("_param_").append(i)
                    .append(i + 1 < paramTypes.length ? ",\n" : "\n");
        }
        return sb.append(")\n{\n    ret;\n}\n").toString();
    }
}
