package dev.gatun.cuda.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The Java code of the READMEs that show the examples (the root README, examples/README.md and
 * cuda-bindings/README.md) is the examples' marked regions, verbatim: every region appears in one
 * of them as a {@code ```java} block, and every {@code ```java} block of theirs is a region. The
 * examples compile in every build, so the READMEs' code compiles too.
 */
class ReadmeSnippetsTest {

    /** Surefire runs in the module's folder. */
    private static final Path ROOT_README = Path.of("..", "README.md");
    private static final List<Path> READMES = List.of(ROOT_README, Path.of("README.md"),
            Path.of("..", "cuda-bindings", "README.md"));
    /** Issue 37 §6: a newcomer meets a whole program on the README's first screen. */
    private static final int FIRST_PROGRAM_BY_LINE = 60;
    private static final String FIRST_PROGRAM = "first-kernel";
    private static final Path SOURCES = Path.of("src", "main", "java", "dev", "gatun", "cuda", "examples");

    private static List<Snippets.Region> exampleRegions() {
        List<Snippets.Region> regions = new ArrayList<>();
        try (Stream<Path> files = Files.list(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                regions.addAll(Snippets.regions(file.getFileName().toString(), Files.readString(file)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return regions;
    }

    /** A {@code ```java} block of one of {@link #READMES}, with the README it is in. */
    private record ReadmeBlock(Path readme, Snippets.Block block) {

        String file() {
            return inRepository(readme);
        }
    }

    /** {@return a README's path in the repository, e.g. examples/README.md} */
    private static String inRepository(Path readme) {
        return Path.of("..").toAbsolutePath().normalize().relativize(readme.toAbsolutePath().normalize()).toString();
    }

    private static List<ReadmeBlock> readmeBlocks() throws IOException {
        List<ReadmeBlock> blocks = new ArrayList<>();
        for (Path readme : READMES) {
            for (Snippets.Block block : Snippets.blocks(Files.readString(readme), "java")) {
                blocks.add(new ReadmeBlock(readme, block));
            }
        }
        return blocks;
    }

    @Test
    void everyExampleRegionIsAJavaBlockOfOneOfTheReadmes() throws IOException {
        List<Snippets.Region> regions = exampleRegions();
        assertFalse(regions.isEmpty(), "no // snippet: regions found under " + SOURCES.toAbsolutePath());
        List<ReadmeBlock> blocks = readmeBlocks();
        List<String> problems = new ArrayList<>();
        for (Snippets.Region region : regions) {
            if (blocks.stream().noneMatch(b -> b.block().text().equals(region.text()))) {
                problems.add(missing(region, blocks));
            }
        }
        if (!problems.isEmpty()) {
            fail(String.join("\n\n", problems));
        }
    }

    @Test
    void everyJavaBlockOfTheReadmesIsAnExampleRegion() throws IOException {
        Set<String> regions = new HashSet<>();
        exampleRegions().forEach(r -> regions.add(r.text()));
        List<String> problems = new ArrayList<>();
        for (ReadmeBlock block : readmeBlocks()) {
            if (!regions.contains(block.block().text())) {
                problems.add(block.file() + " line " + block.block().line() + ": this ```java block comes from no example, so "
                        + "nothing compiles it. Put the code in a program under examples/" + SOURCES
                        + " between // snippet:NAME and // end-snippet, and paste that region here");
            }
        }
        if (!problems.isEmpty()) {
            fail(String.join("\n", problems));
        }
    }

    @Test
    void theRootReadmesFirstJavaBlockIsTheWholeFirstProgramOnItsFirstScreen() throws IOException {
        Snippets.Region program = exampleRegions().stream().filter(r -> r.name().equals(FIRST_PROGRAM)).findFirst()
                .orElseThrow(() -> new AssertionError("no example marks // snippet:" + FIRST_PROGRAM));
        List<Snippets.Block> blocks = Snippets.blocks(Files.readString(ROOT_README), "java");
        assertFalse(blocks.isEmpty(), "README.md has no ```java block");
        Snippets.Block first = blocks.get(0);
        assertEquals(program.text(), first.text(), "README.md's first ```java block (line " + first.line()
                + ") must be the first program, " + program.file() + "'s snippet '" + FIRST_PROGRAM + "'");
        assertTrue(first.line() <= FIRST_PROGRAM_BY_LINE, "README.md's first program starts at line " + first.line()
                + "; keep it within the first " + FIRST_PROGRAM_BY_LINE + " lines, right after the dependency");
    }

    @Test
    void regionNamesAreUnique() {
        Set<String> seen = new HashSet<>();
        for (Snippets.Region region : exampleRegions()) {
            assertTrue(seen.add(region.name()), "snippet '" + region.name() + "' is marked twice (again at "
                    + region.file() + ":" + region.line() + ")");
        }
    }

    @Test
    void aRegionIsTheLinesBetweenItsMarkersShiftedLeftByTheirCommonIndentation() {
        String source = """
                class A {
                    void f() {
                        // snippet:one
                        int a = 1;

                          int b = 2;
                        // end-snippet
                    }
                }
                """;
        List<Snippets.Region> regions = Snippets.regions("A.java", source);
        assertEquals(List.of(new Snippets.Region("one", "A.java", 3, "int a = 1;\n\n  int b = 2;")), regions);
    }

    @Test
    void malformedMarkersAreRejectedWithTheirFileAndLine() {
        IllegalArgumentException open = assertThrows(IllegalArgumentException.class,
                () -> Snippets.regions("A.java", "// snippet:one\nint a;\n"));
        assertEquals("A.java:1: snippet 'one' is never closed; end it with a line // end-snippet", open.getMessage());
        IllegalArgumentException nested = assertThrows(IllegalArgumentException.class,
                () -> Snippets.regions("A.java", "// snippet:one\n// snippet:two\n// end-snippet\n"));
        assertTrue(nested.getMessage().startsWith("A.java:2: snippet 'two' starts inside snippet 'one'"),
                nested.getMessage());
        IllegalArgumentException stray = assertThrows(IllegalArgumentException.class,
                () -> Snippets.regions("A.java", "int a;\n// end-snippet\n"));
        assertTrue(stray.getMessage().startsWith("A.java:2: // end-snippet without"), stray.getMessage());
    }

    @Test
    void onlyBlocksOfTheNamedLanguageAreTaken() {
        String markdown = "text\n```sh\nmvn verify\n```\n```java\nint a = 1;\n```\n";
        assertEquals(List.of(new Snippets.Block(5, "int a = 1;")), Snippets.blocks(markdown, "java"));
    }

    /** Says which region is missing, what to paste, and where the nearest README block first differs. */
    private static String missing(Snippets.Region region, List<ReadmeBlock> blocks) {
        StringBuilder message = new StringBuilder("no README (")
                .append(String.join(", ", READMES.stream().map(ReadmeSnippetsTest::inRepository).toList()))
                .append(") has a ```java block equal")
                .append(" to snippet '").append(region.name()).append("' (").append(region.file()).append(':')
                .append(region.line()).append("). Paste the region in place of the old block:\n```java\n")
                .append(region.text()).append("\n```");
        List<String> want = region.text().lines().toList();
        ReadmeBlock nearest = null;
        long nearestShared = 0;
        for (ReadmeBlock block : blocks) {
            long shared = block.block().text().lines().filter(want::contains).count();
            if (shared > nearestShared) {
                nearest = block;
                nearestShared = shared;
            }
        }
        if (nearest != null) {
            List<String> have = nearest.block().text().lines().toList();
            int i = 0;
            while (i < have.size() && i < want.size() && have.get(i).equals(want.get(i))) {
                i++;
            }
            message.append("\nThe nearest block (").append(nearest.file()).append(" line ").append(nearest.block().line())
                    .append(") first differs at its line ").append(i + 1).append(":\n- README:  ")
                    .append(i < have.size() ? have.get(i) : "(block ends)").append("\n+ example: ")
                    .append(i < want.size() ? want.get(i) : "(region ends)");
        }
        return message.toString();
    }
}
